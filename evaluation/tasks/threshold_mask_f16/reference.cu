#include <cuda_fp16.h>
__global__ void threshold_mask_f16(const __half* x, __half* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = __half2float(x[i]); y[i] = __float2half(v > 0.1f ? v : 0.0f); }
}
