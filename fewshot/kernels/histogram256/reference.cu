// 256-bin histogram of bytes, the same algorithm as kernel.ptx written as idiomatic CUDA:
// per-block bins in shared memory (atomicAdd), grid-strided 16-byte loads (two per trip),
// each block's nonzero bins added to the running counts in work[0:256], a done count in
// work[256], and the last block copies the counts out and zeroes work.
// Launch: block 256, grid min(ceil(n/8192), 1056).
__device__ __forceinline__ void count4(unsigned w, unsigned* bins) {
    atomicAdd(&bins[w & 0xff], 1u);
    atomicAdd(&bins[(w >> 8) & 0xff], 1u);
    atomicAdd(&bins[(w >> 16) & 0xff], 1u);
    atomicAdd(&bins[w >> 24], 1u);
}

__global__ void histogram256(const unsigned char* __restrict__ x, unsigned* __restrict__ counts,
                             unsigned* work, int n) {
    __shared__ unsigned bins[256];
    __shared__ bool is_last;
    bins[threadIdx.x] = 0;
    __syncthreads();
    const uint4* x16 = reinterpret_cast<const uint4*>(x);
    unsigned n16 = (unsigned)n / 16, stride = gridDim.x * 256u;
    unsigned j = blockIdx.x * 256u + threadIdx.x;
    for (; j + stride < n16; j += 2 * stride) {
        uint4 a = x16[j], b = x16[j + stride];
        count4(a.x, bins); count4(a.y, bins); count4(a.z, bins); count4(a.w, bins);
        count4(b.x, bins); count4(b.y, bins); count4(b.z, bins); count4(b.w, bins);
    }
    if (j < n16) {
        uint4 a = x16[j];
        count4(a.x, bins); count4(a.y, bins); count4(a.z, bins); count4(a.w, bins);
    }
    if (blockIdx.x == 0 && 16 * n16 + threadIdx.x < (unsigned)n)
        atomicAdd(&bins[x[16 * n16 + threadIdx.x]], 1u);
    __syncthreads();
    unsigned mine = bins[threadIdx.x];
    if (mine) atomicAdd(&work[threadIdx.x], mine);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) is_last = atomicAdd(&work[256], 1u) == gridDim.x - 1;
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    counts[threadIdx.x] = *reinterpret_cast<volatile unsigned*>(&work[threadIdx.x]);
    work[threadIdx.x] = 0;
    if (threadIdx.x == 0) work[256] = 0;
}
