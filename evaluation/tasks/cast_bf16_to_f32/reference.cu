#include <cuda_bf16.h>
// convert bfloat16 to float
__global__ void cast_bf16_to_f32(const __nv_bfloat16* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __bfloat162float(x[i]);
}
