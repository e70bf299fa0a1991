#include <cuda_bf16.h>
// SiLU on bfloat16, computed in float
__global__ void silu_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __bfloat162float(x[i]);
        y[i] = __float2bfloat16(v / (1.0f + expf(-v)));
    }
}
