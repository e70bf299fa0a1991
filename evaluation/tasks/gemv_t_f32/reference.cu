// y = A^T x: A is rows x cols row-major, y has cols entries; one thread per column
__global__ void gemv_t_f32(const float* A, const float* x, float* y, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float acc = 0.0f;
    for (int r = 0; r < rows; ++r) acc += A[(size_t)r * cols + c] * x[r];
    y[c] = acc;
}
