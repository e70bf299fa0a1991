#include <cuda_fp16.h>
__global__ void relu_half(const __half* x, __half* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hgt(x[i], __float2half(0.f)) ? x[i] : __float2half(0.f);
}
