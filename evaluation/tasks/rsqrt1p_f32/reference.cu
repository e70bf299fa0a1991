// y = 1 / sqrt(1 + |x|)
__global__ void rsqrt1p_f32(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = rsqrtf(1.0f + fabsf(v));
    }
}
