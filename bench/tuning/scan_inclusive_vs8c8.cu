// Inclusive prefix sum y[i] = x[0] + ... + x[i] of float32, in ONE pass over memory: a
// single-pass scan with decoupled look-back (Merrill & Garland 2016, the algorithm of CUB's
// DeviceScan), the same algorithm as the hand-written PTX, written as idiomatic CUDA.
// Launch: block 256, grid cdiv(n, 8192); `state` holds cdiv(n, 8192) + 1 words and must be
// zero before the launch (a cudaMemsetAsync of the workspace).
//
// Each block scans one 8192-element tile, staged in shared memory with cp.async
// (__pipeline_memcpy_async, zero-filled past n) so that the tile costs no registers while the
// block waits for its look-back: a warp owns 1024 consecutive elements (8 chunks of 128, lane l
// elements 4l..4l+3 of each), and each thread reads back only what it copied. Reduce first:
// the block's total is published at once as an "aggregate"; warp 0 then walks back over its
// predecessors' published values, 32 per round trip, until it meets an "inclusive prefix",
// and publishes its own, while the other warps scan their chunk sums. Then every thread scans
// its chunks from shared memory again and stores them. Tiles are handed out in launch order
// by an atomic counter (state[0]), so every predecessor of a tile is already running.
#include <cuda/atomic>
#include <cuda_pipeline.h>

#define THREADS 256
#define CHUNKS 8
#define TILE (THREADS * CHUNKS * 4)
#define FLAG_AGGREGATE 1ull
#define FLAG_PREFIX 2ull

__device__ __forceinline__ unsigned long long pack(unsigned long long flag, float v) {
    return (flag << 32) | __float_as_uint(v);
}

// flag and value travel in one 64-bit word: a reader sees both or neither
__device__ __forceinline__ void publish(unsigned long long* word, unsigned long long v) {
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*word).store(
        v, cuda::memory_order_relaxed);
}

__device__ __forceinline__ unsigned long long peek(unsigned long long* word) {
    return cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*word).load(
        cuda::memory_order_relaxed);
}

__global__ void __launch_bounds__(THREADS, 6) scan_inclusive(const float* x, float* y,
                                                          unsigned long long* state, int n) {
    __shared__ float4 tile_smem[TILE / 4];
    __shared__ int tile_s;
    __shared__ float warp_total_s[THREADS / 32];
    __shared__ float tile_prefix_s;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) tile_s = atomicAdd((unsigned int*)state, 1u);
    __syncthreads();
    const int tile = tile_s;
    const long long tile_base = (long long)tile * TILE;
    if (tile_base >= n) return;
    unsigned long long* status = state + 1;
    const int toff = warp * (CHUNKS * 128) + lane * 4;  // this thread's first element in the tile
    const long long base = tile_base + toff;
    float4* mine = tile_smem + toff / 4;                 // its chunk j is mine[j * 32]
    const bool full = tile_base + TILE <= n;

    if (full) {
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) __pipeline_memcpy_async(mine + j * 32, x + base + j * 128, 16);
    } else {  // the last tile: 4k bytes of a chunk with k < 4 elements left, zero-filled
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {
            long long left = n - (base + j * 128);
            int bytes = left >= 4 ? 16 : left > 0 ? (int)left * 4 : 0;
            __pipeline_memcpy_async(mine + j * 32, bytes ? x + base + j * 128 : x, 16, 16 - bytes);
        }
    }
    __pipeline_commit();
    __pipeline_wait_prior(0);  // this thread's own copies have landed

    // pass 1: chunk sums, the thread's sum, the warp's sum
    float s[CHUNKS], thread_sum = 0.0f;
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
        float4 q = mine[j * 32];
        s[j] = q.x + q.y + q.z + q.w;
        thread_sum += s[j];
    }
    float warp_sum = thread_sum;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) warp_sum += __shfl_xor_sync(0xffffffffu, warp_sum, d);
    if (lane == 0) warp_total_s[warp] = warp_sum;
    __syncthreads();
    // every thread adds the warp totals in the same order: the same tile total everywhere
    float warp_before = 0.0f, tile_total = 0.0f;
#pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) {
        float t = warp_total_s[w];
        if (w < warp) warp_before += t;
        tile_total += t;
    }

    // decoupled look-back, by warp 0
    if (warp == 0) {
        float exclusive = 0.0f;
        if (tile == 0) {
            if (lane == 0) publish(&status[0], pack(FLAG_PREFIX, tile_total));
        } else {
            if (lane == 0) publish(&status[tile], pack(FLAG_AGGREGATE, tile_total));
            int window = tile - 1;  // lane l looks at tile window - l
            while (true) {
                int t = window - lane;
                unsigned long long word;
                do {
                    word = t >= 0 ? peek(&status[t]) : pack(FLAG_PREFIX, 0.0f);
                } while (__any_sync(0xffffffffu, (word >> 32) == 0));
                unsigned prefix_lanes = __ballot_sync(0xffffffffu, (word >> 32) == FLAG_PREFIX);
                // lanes up to and including the nearest inclusive prefix contribute
                int stop = prefix_lanes ? __ffs(prefix_lanes) - 1 : 31;
                float val = lane <= stop ? __uint_as_float((unsigned)word) : 0.0f;
#pragma unroll
                for (int d = 16; d > 0; d >>= 1) val += __shfl_xor_sync(0xffffffffu, val, d);
                exclusive += val;
                if (prefix_lanes) break;
                window -= 32;
            }
            if (lane == 0) publish(&status[tile], pack(FLAG_PREFIX, exclusive + tile_total));
        }
        if (lane == 0) tile_prefix_s = exclusive;
    }

    // every warp (warp 0 after its look-back): scan the chunk sums across the lanes
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {
            float t = __shfl_up_sync(0xffffffffu, s[j], d);
            if (lane >= d) s[j] += t;
        }
    }
    float before[CHUNKS], running = 0.0f;
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
        float up = __shfl_up_sync(0xffffffffu, s[j], 1);
        before[j] = (lane == 0 ? 0.0f : up) + running;
        running += __shfl_sync(0xffffffffu, s[j], 31);
    }
    __syncthreads();
    const float offset = tile_prefix_s + warp_before;

    // pass 2: scan each chunk's four floats with its offset, store
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
        float4 q = mine[j * 32];
        long long i = base + j * 128;
        float o0 = offset + before[j] + q.x;
        float o1 = o0 + q.y, o2 = o1 + q.z, o3 = o2 + q.w;
        if (full) {
            *reinterpret_cast<float4*>(y + i) = make_float4(o0, o1, o2, o3);
        } else {
            if (i < n) y[i] = o0;
            if (i + 1 < n) y[i + 1] = o1;
            if (i + 2 < n) y[i + 2] = o2;
            if (i + 3 < n) y[i + 3] = o3;
        }
    }
}
