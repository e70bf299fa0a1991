// clamp to [-0.5, 0.5]
__global__ void clamp_f32(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = fminf(fmaxf(v, -0.5f), 0.5f);
    }
}
