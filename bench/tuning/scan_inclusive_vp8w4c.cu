// Inclusive prefix sum y[i] = x[0] + ... + x[i] of float32, in ONE pass over memory: a
// single-pass scan with decoupled look-back (Merrill & Garland 2016, the algorithm of CUB's
// DeviceScan), the same algorithm as kernel.ptx written as idiomatic CUDA.
// Launch: block 256, grid min(cdiv(n, 4096), 660), 32768 bytes of dynamic shared memory;
// `state` holds cdiv(n, 4096) + 1 words and must be zero before the launch (a cudaMemsetAsync
// of the workspace).
//
// A block scans tile after tile (4096 elements each), taken in order from an atomic ticket
// (state[0]): while it scans one, the next one is already being copied into the other shared
// stage (cp.async through __pipeline_memcpy_async, zero-filled past n) and the ticket after it
// is being fetched. A warp owns 512 consecutive elements of a tile, 4 chunks of 128, lane l
// elements 4l..4l+3 of each. The tile's total is published at once as an "aggregate"; warp 0
// then walks back over its predecessors' published values, 64 per round trip, until it meets
// an "inclusive prefix", and publishes its own. A block's other tickets are larger than its
// current tile, so the smallest unfinished tile is always being scanned: no deadlock.
#include <cuda/atomic>
#include <cuda_pipeline.h>

#define THREADS 256
#define CHUNKS 4
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

// this thread's CHUNKS 16-byte pieces of the tile starting at element `start` into its stage
// `dst` (one commit group); `first` = start + this thread's first element in a tile
__device__ __forceinline__ void issue(float4* dst, const float* x, long long start, int toff, int n) {
    const long long first = start + toff;
    if (start + TILE <= n) {
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) __pipeline_memcpy_async(dst + j * 32, x + first + j * 128, 16);
    } else {  // the last tile: 4k bytes of a chunk with k < 4 elements left, zero-filled
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {
            long long left = n - (first + j * 128);
            int bytes = left >= 4 ? 16 : left > 0 ? (int)left * 4 : 0;
            __pipeline_memcpy_async(dst + j * 32, bytes ? x + first + j * 128 : x, 16, 16 - bytes);
        }
    }
    __pipeline_commit();
}

__global__ void __launch_bounds__(THREADS, 5) scan_inclusive(const float* x, float* y,
                                                          unsigned long long* state, int n) {
    extern __shared__ float4 stage[];  // two stages of TILE floats
    __shared__ unsigned tile_s;
    __shared__ float warp_total_s[THREADS / 32];
    __shared__ float tile_prefix_s;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned ntiles = (unsigned)(((long long)n + TILE - 1) / TILE);
    unsigned long long* status = state + 1;
    const int toff = warp * (CHUNKS * 128) + lane * 4;  // this thread's first element in a tile
    float4* mine = stage + toff / 4;              // this thread's pieces of the stage being scanned
    float4* other = stage + TILE / 4 + toff / 4;  // and of the one being filled

    if (threadIdx.x == 0) tile_s = atomicAdd((unsigned*)state, 1u);
    __syncthreads();
    unsigned tile = tile_s;
    if (tile >= ntiles) return;
    issue(mine, x, (long long)tile * TILE, toff, n);
    __syncthreads();
    if (threadIdx.x == 0) tile_s = atomicAdd((unsigned*)state, 1u);
    __syncthreads();
    unsigned next = tile_s;

    while (true) {
        const bool has_next = next < ntiles;
        if (has_next) issue(other, x, (long long)next * TILE, toff, n);
        else __pipeline_commit();
        unsigned after = 0;  // the ticket after next, fetched while this tile is scanned
        if (threadIdx.x == 0) after = atomicAdd((unsigned*)state, 1u);
        __pipeline_wait_prior(1);
        float v[CHUNKS][4];
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {
            float4 q = mine[j * 32];
            v[j][0] = q.x; v[j][1] = q.y; v[j][2] = q.z; v[j][3] = q.w;
        }
        const long long base = (long long)tile * TILE + toff;
        // scan within the thread's four elements of each chunk
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {
            v[j][1] += v[j][0]; v[j][2] += v[j][1]; v[j][3] += v[j][2];
        }
        // inclusive scan of the per-thread sums across the warp, per chunk
        float incl[CHUNKS];
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) incl[j] = v[j][3];
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
#pragma unroll
            for (int j = 0; j < CHUNKS; ++j) {
                float t = __shfl_up_sync(0xffffffffu, incl[j], d);
                if (lane >= d) incl[j] += t;
            }
        }
        float before[CHUNKS], chunk_total[CHUNKS];
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {
            float up = __shfl_up_sync(0xffffffffu, incl[j], 1);
            before[j] = lane == 0 ? 0.0f : up;
            chunk_total[j] = __shfl_sync(0xffffffffu, incl[j], 31);
        }
        float warp_running = 0.0f;
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {
            before[j] += warp_running;
            warp_running += chunk_total[j];
        }
        if (lane == 0) warp_total_s[warp] = warp_running;
        __syncthreads();
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
                int window = (int)tile - 1;
                while (true) {
                    int t = window - lane;
                    unsigned long long word;
                    do {
                        word = t >= 0 ? peek(&status[t]) : pack(FLAG_PREFIX, 0.0f);
                    } while (__any_sync(0xffffffffu, (word >> 32) == 0));
                    unsigned prefix_lanes = __ballot_sync(0xffffffffu, (word >> 32) == FLAG_PREFIX);
                    int stop = prefix_lanes ? __ffs(prefix_lanes) - 1 : 31;
                    float val = lane <= stop ? __uint_as_float((unsigned)word) : 0.0f;
                    unsigned long long word1 = pack(FLAG_PREFIX, 0.0f);
                    if (!prefix_lanes) {  // the far 32 matter only without a near prefix
                        do {
                            word1 = t - 32 >= 0 ? peek(&status[t - 32]) : pack(FLAG_PREFIX, 0.0f);
                        } while (__any_sync(0xffffffffu, (word1 >> 32) == 0));
                    }
                    unsigned far_lanes = prefix_lanes ? 0u : __ballot_sync(0xffffffffu, (word1 >> 32) == FLAG_PREFIX);
                    int stop1 = prefix_lanes ? -1 : far_lanes ? __ffs(far_lanes) - 1 : 31;
                    val += lane <= stop1 ? __uint_as_float((unsigned)word1) : 0.0f;
                    prefix_lanes |= far_lanes;
#pragma unroll
                    for (int d = 16; d > 0; d >>= 1) val += __shfl_xor_sync(0xffffffffu, val, d);
                    exclusive += val;
                    if (prefix_lanes) break;
                    window -= 64;
                }
                if (lane == 0) publish(&status[tile], pack(FLAG_PREFIX, exclusive + tile_total));
            }
            if (lane == 0) tile_prefix_s = exclusive;
        }
        if (threadIdx.x == 0) tile_s = after;  // everyone read tile_s before the last barrier
        __syncthreads();
        after = tile_s;
        const float offset = tile_prefix_s + warp_before;
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {
            long long i = base + j * 128;
            float add = offset + before[j];
            float o0 = add + v[j][0], o1 = add + v[j][1], o2 = add + v[j][2], o3 = add + v[j][3];
            if (i + 3 < n) {
                *reinterpret_cast<float4*>(y + i) = make_float4(o0, o1, o2, o3);
            } else {
                if (i < n) y[i] = o0;
                if (i + 1 < n) y[i + 1] = o1;
                if (i + 2 < n) y[i + 2] = o2;
            }
        }
        if (!has_next) return;
        tile = next;
        next = after;
        float4* swap = mine;
        mine = other;
        other = swap;
    }
}
