// y = A x: A is rows x cols row-major; one warp per row, 8 warps per block
__global__ void gemv_f32(const float* A, const float* x, float* y, int rows, int cols) {
    int row = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    float acc = 0.0f;
    for (int j = lane; j < cols; j += 32) acc += A[(size_t)row * cols + j] * x[j];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
    if (lane == 0) y[row] = acc;
}
