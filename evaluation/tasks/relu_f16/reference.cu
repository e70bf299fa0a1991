#include <cuda_fp16.h>
// ReLU on half precision
__global__ void relu_f16(const __half* x, __half* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __half2float(x[i]);
        y[i] = __float2half(fmaxf(v, 0.0f));
    }
}
