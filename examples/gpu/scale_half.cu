#include <cuda_fp16.h>

// f16 in and out, computed in f32: checked against numpy in float64 with the f16 tolerance.
// @gputest s: f32 = 0.75; launch: grid=ceil(n/128) block=128
// @gputest ref: y = x * s
__global__ void scale_half(const __half* x, __half* y, float s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = __float2half(__half2float(x[i]) * s);
    }
}
