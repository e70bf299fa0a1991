// Layer norm over rows, float32, one row per block of 512 threads, the same algorithm as
// kernel.ptx written as idiomatic CUDA: block-reduce the mean, block-reduce the variance of
// (x - mean), write (x - mean) * rsqrt(var + 1e-5) * gamma + beta; float4 accesses, cols a
// multiple of 4. (The idiomatic form walks the row once per step; the hand-written PTX holds
// the row in registers and reads it once.) Launch: block 512, grid rows.
__device__ __forceinline__ float block_sum(float v, float* red) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = 0.f;
    for (int w = 0; w < 16; ++w) v += red[w];
    __syncthreads();
    return v;
}

__global__ void layernorm_rows(const float* __restrict__ x, const float* __restrict__ gamma,
                               const float* __restrict__ beta, float* __restrict__ y, int rows,
                               int cols) {
    __shared__ float red[16];
    const float4* xr = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * cols);
    float4* yr = reinterpret_cast<float4*>(y + (size_t)blockIdx.x * cols);
    const float4* g4 = reinterpret_cast<const float4*>(gamma);
    const float4* b4 = reinterpret_cast<const float4*>(beta);
    int n4 = cols / 4;
    float s = 0.f;
    for (int j = threadIdx.x; j < n4; j += blockDim.x) {
        float4 v = xr[j];
        s += (v.x + v.y) + (v.z + v.w);
    }
    float mean = block_sum(s, red) / cols;
    float q = 0.f;
    for (int j = threadIdx.x; j < n4; j += blockDim.x) {
        float4 v = xr[j];
        float a = v.x - mean, b = v.y - mean, c = v.z - mean, d = v.w - mean;
        q += a * a + b * b + c * c + d * d;
    }
    float rstd = rsqrtf(block_sum(q, red) / cols + 1e-5f);
    for (int j = threadIdx.x; j < n4; j += blockDim.x) {
        float4 v = xr[j], g = g4[j], b = b4[j];
        yr[j] = make_float4((v.x - mean) * rstd * g.x + b.x, (v.y - mean) * rstd * g.y + b.y,
                            (v.z - mean) * rstd * g.z + b.z, (v.w - mean) * rstd * g.w + b.w);
    }
}
