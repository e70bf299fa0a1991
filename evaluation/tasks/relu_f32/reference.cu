// y = max(x, 0)
__global__ void relu_f32(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = fmaxf(v, 0.0f);
    }
}
