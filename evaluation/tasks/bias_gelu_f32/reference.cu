// y = gelu_tanh(x + b[col]); x, r, y are rows x cols row-major, b (and s) has cols entries
__global__ void bias_gelu_f32(const float* x, const float* b, float* y, int rows, int cols) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long long)rows * cols) {
        int c = (int)(i % cols);
        float v = x[i] + b[c];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}
