// two outputs: s = sin(x), c = cos(x)
__global__ void sincos_f32(const float* x, float* s, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xv = x[i];
        s[i] = sinf(xv);
        c[i] = cosf(xv);
    }
}
