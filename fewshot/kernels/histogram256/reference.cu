// 256-bin histogram of bytes, the same algorithm as kernel.ptx written as idiomatic CUDA:
// per-block bins in shared memory (atomicAdd) in 16 interleaved copies (bin v, copy c at
// 16v + c; lane l counts into copy l % 16, so one warp's atomics rarely share a bank), summed
// per bin at the end; grid-strided 16-byte loads (two per trip),
// each block's nonzero bins added to the running counts in work[0:256], a done count in
// work[256], and the last block copies the counts out and zeroes work.
// Launch: block 256, grid min(ceil(n/8192), 1056).
__device__ __forceinline__ void count4(unsigned w, unsigned* bins) {
    atomicAdd(&bins[16 * (w & 0xff)], 1u);
    atomicAdd(&bins[16 * ((w >> 8) & 0xff)], 1u);
    atomicAdd(&bins[16 * ((w >> 16) & 0xff)], 1u);
    atomicAdd(&bins[16 * (w >> 24)], 1u);
}

__global__ void histogram256(const unsigned char* __restrict__ x, unsigned* __restrict__ counts,
                             unsigned* work, int n) {
    __shared__ unsigned all_bins[256 * 16];
    __shared__ bool is_last;
    for (int c = 0; c < 16; ++c) all_bins[threadIdx.x * 16 + c] = 0;
    __syncthreads();
    unsigned* bins = all_bins + (threadIdx.x & 15);  // this lane's copy: bin v at bins[16 v]
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
        atomicAdd(&bins[16 * x[16 * n16 + threadIdx.x]], 1u);
    __syncthreads();
    unsigned mine = 0;  // the 16 copies of bin tid, read so that a warp hits 32 banks
    for (int k = 0; k < 16; ++k) mine += all_bins[threadIdx.x * 16 + ((k + (threadIdx.x & 31) / 2) & 15)];
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
