#include <cuda_bf16.h>
// c = a + b on bfloat16
__global__ void add_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float av = __bfloat162float(a[i]);
        float bv = __bfloat162float(b[i]);
        c[i] = __float2bfloat16(av + bv);
    }
}
