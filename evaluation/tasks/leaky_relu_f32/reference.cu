// leaky ReLU, slope 0.01
__global__ void leaky_relu_f32(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.01f * v;
    }
}
