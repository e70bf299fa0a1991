// out[0] = sum(x[0:n]) in one pass and one launch, the same algorithm as kernel.ptx written as
// idiomatic CUDA (the "threadfence reduction" pattern): grid-strided float4 loads, four per
// trip; warp shuffles and shared memory for the block's sum; each block's partial in work[],
// a done count in work[1056]; the last block to finish sums the partials.
// Launch: block 256, grid min(ceil(n/2048), 1056).
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float block_sum(float v, float* warp_sums) {
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = 0.f;
    if (threadIdx.x == 0)
        for (int w = 0; w < 8; ++w) s += warp_sums[w];
    return s;  // valid in thread 0
}

__global__ void reduce_sum(const float* __restrict__ x, float* __restrict__ out,
                           float* work, int n) {
    __shared__ float warp_sums[8];
    __shared__ bool is_last;
    unsigned* done = reinterpret_cast<unsigned*>(work + 1056);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    unsigned n4 = (unsigned)n / 4, stride = gridDim.x * 256u;
    unsigned j = blockIdx.x * 256u + threadIdx.x;
    float acc = 0.f;
    for (; j + 3 * stride < n4; j += 4 * stride) {
        float4 a = x4[j], b = x4[j + stride], c = x4[j + 2 * stride], d = x4[j + 3 * stride];
        acc += (a.x + a.y + a.z + a.w) + (b.x + b.y + b.z + b.w) + (c.x + c.y + c.z + c.w) +
               (d.x + d.y + d.z + d.w);
    }
    for (; j < n4; j += stride) {
        float4 a = x4[j];
        acc += a.x + a.y + a.z + a.w;
    }
    if (blockIdx.x == 0 && 4 * n4 + threadIdx.x < (unsigned)n) acc += x[4 * n4 + threadIdx.x];
    float s = block_sum(acc, warp_sums);
    if (threadIdx.x == 0) {
        work[blockIdx.x] = s;
        __threadfence();
        is_last = atomicAdd(done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    float p = 0.f;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += 256)
        p += *reinterpret_cast<volatile float*>(work + b);
    __syncthreads();
    s = block_sum(p, warp_sums);
    if (threadIdx.x == 0) {
        out[0] = s;
        *done = 0;
    }
}
