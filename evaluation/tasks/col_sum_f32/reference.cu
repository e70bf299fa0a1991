// y[c] = sum over rows of x[r, c] (a reduction along axis 0); one thread per column
__global__ void col_sum_f32(const float* x, float* y, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float acc = 0.0f;
    for (int r = 0; r < rows; ++r) acc += x[(size_t)r * cols + c];
    y[c] = acc;
}
