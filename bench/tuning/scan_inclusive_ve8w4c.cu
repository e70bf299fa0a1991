// Inclusive prefix sum y[i] = x[0] + ... + x[i] of float32, in ONE pass over memory: a
// single-pass scan with decoupled look-back (Merrill & Garland 2016, the algorithm of CUB's
// DeviceScan), the same algorithm as kernel.ptx written as idiomatic CUDA.
// Launch: block 288 (8 data warps + 1 look-back warp), grid cdiv(n, 4096); `state` holds cdiv(n, 4096) + 1 words and must be
// zero before the launch (a cudaMemsetAsync of the workspace).
//
// Each block scans one 4096-element tile: a warp owns 512 consecutive elements, read as
// 4 coalesced 16-byte loads per thread (chunk j of a warp = elements j*128 .. j*128+127). The
// look-back warp starts walking back over its predecessors' published values (32 per round
// trip) as soon as the block has its tile, while the data warps load and scan; it publishes the
// tile's total as an "aggregate" as soon as they hand it over (a flag in shared memory it polls),
// and the tile's inclusive prefix once it meets a predecessor's. Tiles are handed out in launch order by an atomic
// counter (state[0]), so every predecessor of a tile is already running: no deadlock.
#include <cuda/atomic>

#define THREADS 256
#define ALL_THREADS 288
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

__global__ void __launch_bounds__(ALL_THREADS, 5) scan_inclusive(const float* x, float* y,
                                                          unsigned long long* state, int n) {
    __shared__ int tile_s;
    __shared__ float warp_total_s[THREADS / 32];
    __shared__ float tile_prefix_s;
    __shared__ volatile float tile_total_s;
    __shared__ volatile unsigned ready_s;  // 1 once tile_total_s holds the tile's total
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) {
        tile_s = atomicAdd((unsigned int*)state, 1u);
        ready_s = 0;
    }
    __syncthreads();
    const int tile = tile_s;
    const long long tile_base = (long long)tile * TILE;
    if (tile_base >= n) return;
    unsigned long long* status = state + 1;

    if (warp == THREADS / 32) {  // the look-back warp
        float exclusive = 0.0f, tile_total = 0.0f;
        bool agg_done = false;
        if (tile > 0) {
            int window = tile - 1;  // lane l looks at tile window - l
            while (true) {
                int t = window - lane;
                unsigned long long word;
                do {
                    if (!agg_done && ready_s) {  // the total is in: publish it as the aggregate
                        __threadfence_block();
                        tile_total = tile_total_s;
                        if (lane == 0) publish(&status[tile], pack(FLAG_AGGREGATE, tile_total));
                        agg_done = true;
                    }
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
        }
        while (!ready_s) {
        }
        __threadfence_block();
        tile_total = tile_total_s;
        if (lane == 0) {
            publish(&status[tile], pack(FLAG_PREFIX, exclusive + tile_total));
            tile_prefix_s = exclusive;
        }
        asm volatile("bar.sync 2, %0;" ::"n"(ALL_THREADS));
        return;
    }

    // load: thread holds v[j][0..3] = x[base + j*128 + lane*4 .. +3], zero past n
    float v[CHUNKS][4];
    const long long base = tile_base + warp * (CHUNKS * 128) + lane * 4;
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
        long long i = base + j * 128;
        if (i + 3 < n) {
            float4 q = __ldg(reinterpret_cast<const float4*>(x + i));
            v[j][0] = q.x; v[j][1] = q.y; v[j][2] = q.z; v[j][3] = q.w;
        } else {
#pragma unroll
            for (int k = 0; k < 4; ++k) v[j][k] = (i + k < n) ? __ldg(x + i + k) : 0.0f;
        }
    }
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
    // what comes before this thread's elements inside the warp's 512
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
    asm volatile("bar.sync 1, %0;" ::"n"(THREADS));  // the data warps only
    // every thread adds the warp totals in the same order: the same tile total everywhere
    float warp_before = 0.0f, tile_total = 0.0f;
#pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) {
        float t = warp_total_s[w];
        if (w < warp) warp_before += t;
        tile_total += t;
    }

    if (threadIdx.x == 0) {  // hand the tile total to the look-back warp
        tile_total_s = tile_total;
        __threadfence_block();
        ready_s = 1;
    }
    asm volatile("bar.sync 2, %0;" ::"n"(ALL_THREADS));  // the look-back warp has the prefix
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
}
