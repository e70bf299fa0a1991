// Row softmax, float32, one row per block of 512 threads, the same algorithm as kernel.ptx
// written as idiomatic CUDA: block-reduce the row maximum, block-reduce the sum of
// exp(x - max), write exp(x - max) / sum; float4 accesses, cols a multiple of 4.
// (The idiomatic form walks the row once per step; the hand-written PTX keeps the row in
// registers and reads it once.) Launch: block 512, grid rows.
__device__ __forceinline__ float block_max(float v, float* red) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = red[0];
    for (int w = 1; w < 16; ++w) v = fmaxf(v, red[w]);
    __syncthreads();
    return v;
}

__device__ __forceinline__ float block_sum(float v, float* red) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = 0.f;
    for (int w = 0; w < 16; ++w) v += red[w];
    __syncthreads();
    return v;
}

__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int rows,
                             int cols) {
    __shared__ float red[16];
    const float4* xr = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * cols);
    float4* yr = reinterpret_cast<float4*>(y + (size_t)blockIdx.x * cols);
    int n4 = cols / 4;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < n4; j += blockDim.x) {
        float4 v = xr[j];
        m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
    m = block_max(m, red);
    float s = 0.f;
    for (int j = threadIdx.x; j < n4; j += blockDim.x) {
        float4 v = xr[j];
        s += expf(v.x - m) + expf(v.y - m) + expf(v.z - m) + expf(v.w - m);
    }
    float inv = 1.f / block_sum(s, red);
    for (int j = threadIdx.x; j < n4; j += blockDim.x) {
        float4 v = xr[j];
        yr[j] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv,
                            expf(v.w - m) * inv);
    }
}
