#include <cuda_bf16.h>
// RMS norm of each row on bfloat16 (float inside, eps 1e-6), then * w; one block of 256 threads per row, rows x cols row-major

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

__global__ void rmsnorm_bf16(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, int rows, int cols) {
    __shared__ float s[256];
    int row = blockIdx.x;
    if (row >= rows) return;
    const __nv_bfloat16* xr = x + (size_t)row * cols;
    __nv_bfloat16* yr = y + (size_t)row * cols;
    float sq = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) { float v = __bfloat162float(xr[j]); sq += v * v; }
    float r = rsqrtf(block_reduce(sq, s, false) / cols + 1e-6f);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = __float2bfloat16(__bfloat162float(xr[j]) * r * __bfloat162float(w[j]));
}
