#include <cuda_bf16.h>
// sigmoid on bfloat16, computed in float
__global__ void sigmoid_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __bfloat162float(x[i]);
        y[i] = __float2bfloat16(1.0f / (1.0f + expf(-v)));
    }
}
