#include <cuda_fp16.h>
// convert float to half (round to nearest)
__global__ void cast_f32_to_f16(const float* x, __half* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2half(x[i]);
}
