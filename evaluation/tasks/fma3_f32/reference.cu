// d = a * b + c
__global__ void fma3_f32(const float* a, const float* b, const float* c, float* d, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float av = a[i];
        float bv = b[i];
        float cv = c[i];
        d[i] = fmaf(av, bv, cv);
    }
}
