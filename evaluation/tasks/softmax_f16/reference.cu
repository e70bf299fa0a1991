#include <cuda_fp16.h>
// softmax along each row, half precision in and out (float inside); one block of 256 threads per row, rows x cols row-major

// block-wide reduction of one value per thread (blockDim.x = 256)
__device__ float block_reduce(float v, float* s, bool is_max) {
    s[threadIdx.x] = v;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) {
            float a = s[threadIdx.x], b = s[threadIdx.x + o];
            s[threadIdx.x] = is_max ? fmaxf(a, b) : a + b;
        }
        __syncthreads();
    }
    float r = s[0];
    __syncthreads();
    return r;
}

__global__ void softmax_f16(const __half* x, __half* y, int rows, int cols) {
    __shared__ float s[256];
    int row = blockIdx.x;
    if (row >= rows) return;
    const __half* xr = x + (size_t)row * cols;
    __half* yr = y + (size_t)row * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, __half2float(xr[j]));
    m = block_reduce(m, s, true);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(__half2float(xr[j]) - m);
    sum = block_reduce(sum, s, false);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = __float2half(expf(__half2float(xr[j]) - m) / sum);
}
