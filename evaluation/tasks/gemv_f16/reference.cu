#include <cuda_fp16.h>
// y = A x with half-precision A and x, float accumulation and float y; one warp per row
__global__ void gemv_f16(const __half* A, const __half* x, float* y, int rows, int cols) {
    int row = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    float acc = 0.0f;
    for (int j = lane; j < cols; j += 32) acc += __half2float(A[(size_t)row * cols + j]) * __half2float(x[j]);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
    if (lane == 0) y[row] = acc;
}
