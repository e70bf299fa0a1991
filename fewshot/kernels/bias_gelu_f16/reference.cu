// y[i] = gelu_tanh(x[i] + b[i % cols]) in half precision, the same algorithm as kernel.ptx
// written as idiomatic CUDA: each block owns 4096 halves; a full block's threads each move two
// 16-byte vectors (8 halves, 2048 apart), add the bias as half2, and evaluate GELU in float
// (the usual way to write it in CUDA C++); the partial last block takes one half per step.
// Launch: block 256, grid ceil(n/4096); cols a multiple of 8.
#include <cuda_fp16.h>

__device__ __forceinline__ float gelu_tanh(float v) {
    return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}

__device__ __forceinline__ uint4 gelu8(uint4 xv, uint4 bv) {
    __half2* x = reinterpret_cast<__half2*>(&xv);
    const __half2* b = reinterpret_cast<const __half2*>(&bv);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        float2 v = __half22float2(__hadd2(x[k], b[k]));
        x[k] = __floats2half2_rn(gelu_tanh(v.x), gelu_tanh(v.y));
    }
    return xv;
}

__global__ void bias_gelu_f16(const __half* __restrict__ x, const __half* __restrict__ b,
                              __half* __restrict__ y, int n, int cols) {
    unsigned first = blockIdx.x * 4096u;
    if (first + 4096u <= (unsigned)n) {
        unsigned i0 = first + threadIdx.x * 8u, i1 = i0 + 2048u;
        uint4 x0 = *reinterpret_cast<const uint4*>(x + i0);
        uint4 x1 = *reinterpret_cast<const uint4*>(x + i1);
        uint4 b0 = *reinterpret_cast<const uint4*>(b + i0 % cols);
        uint4 b1 = *reinterpret_cast<const uint4*>(b + i1 % cols);
        *reinterpret_cast<uint4*>(y + i0) = gelu8(x0, b0);
        *reinterpret_cast<uint4*>(y + i1) = gelu8(x1, b1);
        return;
    }
    for (unsigned k = 0, i = first + threadIdx.x; k < 16 && i < (unsigned)n; ++k, i += 256)
        y[i] = __float2half_rn(gelu_tanh(__half2float(__hadd(x[i], b[i % cols]))));
}
