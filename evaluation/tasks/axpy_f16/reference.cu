#include <cuda_fp16.h>
// y = alpha * x + y on half precision
__global__ void axpy_f16(const __half* x, __half* y, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xv = __half2float(x[i]);
        float yv = __half2float(y[i]);
        y[i] = __float2half(alpha * xv + yv);
    }
}
