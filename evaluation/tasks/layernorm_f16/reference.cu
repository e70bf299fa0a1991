#include <cuda_fp16.h>
// layer norm of each row on half precision (float inside, eps 1e-5); one block of 256 threads per row, rows x cols row-major

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

__global__ void layernorm_f16(const __half* x, const __half* gamma, const __half* beta, __half* y, int rows, int cols) {
    __shared__ float s[256];
    int row = blockIdx.x;
    if (row >= rows) return;
    const __half* xr = x + (size_t)row * cols;
    __half* yr = y + (size_t)row * cols;
    float sum = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) sum += __half2float(xr[j]);
    float mean = block_reduce(sum, s, false) / cols;
    float sq = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) { float d = __half2float(xr[j]) - mean; sq += d * d; }
    float rstd = rsqrtf(block_reduce(sq, s, false) / cols + 1e-5f);
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        yr[j] = __float2half((__half2float(xr[j]) - mean) * rstd * __half2float(gamma[j]) + __half2float(beta[j]));
}
