#include <cuda_bf16.h>
// y = relu(s[col] * x + b[col]) on bfloat16; x, r, y are rows x cols row-major, b (and s) has cols entries
__global__ void scale_bias_relu_bf16(const __nv_bfloat16* x, const __nv_bfloat16* s, const __nv_bfloat16* b, __nv_bfloat16* y, int rows, int cols) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long long)rows * cols) {
        int c = (int)(i % cols);
        float v = __bfloat162float(s[c]) * __bfloat162float(x[i]) + __bfloat162float(b[c]);
        y[i] = __float2bfloat16(fmaxf(v, 0.0f));
    }
}
