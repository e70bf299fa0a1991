__global__ void clip_scale_f32(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 4.0f * fminf(fmaxf(x[i], -0.25f), 0.25f);
}
