// y = relu(x + b[col]) + r; x, r, y are rows x cols row-major, b (and s) has cols entries
__global__ void bias_relu_residual_f32(const float* x, const float* b, const float* r, float* y, int rows, int cols) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long long)rows * cols) {
        int c = (int)(i % cols);
        float v = x[i] + b[c];
        y[i] = fmaxf(v, 0.0f) + r[i];
    }
}
