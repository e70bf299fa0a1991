// 256-bin histogram of bytes, the same algorithm as kernel.ptx written as idiomatic CUDA:
// per-block bins in shared memory (atomicAdd), one copy per lane (bin v of lane l at 32 v + l,
// so one warp's atomics always hit 32 different banks), summed per bin at the end; grid-strided
// 16-byte loads (two per trip), each block's nonzero bins added to the running counts in
// work[0:256], a done count in work[256], and the last block copies the counts out and zeroes
// work. Launch: block 512, grid min(ceil(n/16384), 528).
#define THREADS 512

__device__ __forceinline__ void count4(unsigned w, unsigned* bins) {
    atomicAdd(&bins[32 * (w & 0xff)], 1u);
    atomicAdd(&bins[32 * ((w >> 8) & 0xff)], 1u);
    atomicAdd(&bins[32 * ((w >> 16) & 0xff)], 1u);
    atomicAdd(&bins[32 * (w >> 24)], 1u);
}

__global__ void __launch_bounds__(THREADS) histogram256(const unsigned char* __restrict__ x,
                                                        unsigned* __restrict__ counts,
                                                        unsigned* work, int n) {
    __shared__ uint4 all_bins4[256 * 32 / 4];
    __shared__ bool is_last;
    unsigned* all_bins = reinterpret_cast<unsigned*>(all_bins4);
    for (int i = threadIdx.x; i < 256 * 32 / 4; i += THREADS) all_bins4[i] = make_uint4(0, 0, 0, 0);
    __syncthreads();
    const unsigned lane = threadIdx.x & 31;
    unsigned* bins = all_bins + lane;  // this lane's copy: bin v at bins[32 v]
    const uint4* x16 = reinterpret_cast<const uint4*>(x);
    unsigned n16 = (unsigned)n / 16, stride = gridDim.x * THREADS;
    unsigned j = blockIdx.x * THREADS + threadIdx.x;
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
        atomicAdd(&bins[32 * x[16 * n16 + threadIdx.x]], 1u);
    __syncthreads();
    if (threadIdx.x < 256) {
        unsigned mine = 0;  // the 32 copies of bin tid, read so that a warp hits 32 banks
        for (int k = 0; k < 32; ++k) mine += all_bins[threadIdx.x * 32 + ((k + lane) & 31)];
        if (mine) atomicAdd(&work[threadIdx.x], mine);
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) is_last = atomicAdd(&work[256], 1u) == gridDim.x - 1;
    __syncthreads();
    if (!is_last || threadIdx.x >= 256) return;
    __threadfence();
    counts[threadIdx.x] = *reinterpret_cast<volatile unsigned*>(&work[threadIdx.x]);
    work[threadIdx.x] = 0;
    if (threadIdx.x == 0) work[256] = 0;
}
