// average pooling over windows of 4, stride 4: y[i] = mean(x[4i .. 4i + 3])
__global__ void avgpool1d_k4_f32(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = (x[4 * i] + x[4 * i + 1] + x[4 * i + 2] + x[4 * i + 3]) * 0.25f;
}
