// inclusive prefix sum of each row (integers); one thread per row, rows x cols row-major
__global__ void cumsum_rows_i32(const int* x, int* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    size_t base = (size_t)r * cols;
    int acc = 0;
    for (int j = 0; j < cols; ++j) {
        int v = x[base + j];
        acc = acc + v;
        y[base + j] = acc;
    }
}
