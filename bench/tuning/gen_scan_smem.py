"""Writes the shared-memory-staged scan_inclusive candidates (PTX, CUDA reference, spec) into
bench/tuning/.

The PTX is written here by hand, as text (no compiler involved): this script only repeats the
per-chunk lines for C chunks per thread and W warps per block. What these candidates change
against the library kernel (each thread holds its 16 floats in registers from the load to the
store, 40 registers, 6 blocks of 256 per SM = 96 KB per SM in flight): the tile goes from
global to shared memory with cp.async (16 bytes per thread and chunk, zero-filled past n), so
a block's tile costs no registers while it waits for its look-back, and more blocks fit on an
SM: 12 blocks of 128 threads with tiles of 4096 (16 KB each) or 6 blocks of 256 with tiles of
8192 (32 KB each), 192 KB per SM either way, twice the bytes in flight of the library kernel.
The tile is then read twice from shared memory (reduce-then-scan inside the block):

1. each thread sums its chunks (kept: one float per chunk), the warp reduces its sum with
   butterfly shuffles, the warp sums meet in shared memory; the tile's aggregate is published
   by warp 0 as soon as the barrier is passed, before any scan work;
2. warp 0 does the decoupled look-back (window 32, as in the library kernel) while the other
   warps scan their chunk sums across lanes (shfl.up) into each chunk's "before";
3. after the second barrier every thread reads its chunks again, scans the four floats of
   each with the offset folded in, and stores them (coalesced 16-byte stores).

Each thread reads back only the shared bytes it copied itself, so cp.async.wait_group is all
the ordering the copies need (no barrier).

    python3 bench/tuning/gen_scan_smem.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ZERO = "0f00000000"


def ptx(nw: int, c: int, minb: int, dyn: bool = False) -> str:
    threads, tile, per_warp = nw * 32, nw * c * 128, c * 128
    if dyn:  # above 48 KB shared memory must be dynamic (the launch opts in)
        shared_txt = f"{tile * 4} bytes of dynamic shared memory (the tile)"
        module_decl = ".extern .shared .align 16 .b8 tile_smem[];   // the tile: dynamic\n"
        smem_decl = "// (tile_smem: the dynamic shared memory, declared above)"
    else:
        shared_txt = f"no dynamic shared memory (the tile: {tile * 4} bytes static)"
        module_decl = ""
        smem_decl = f".shared .align 16 .b8  tile_smem[{tile * 4}];"
    L: list[str] = []
    a = L.append
    a(f"""//
// scan_inclusive: y[i] = x[0] + ... + x[i], float32, single pass with decoupled look-back.
// Hand-written for the ptxls few-shot library (not compiler output).
// Launch: block ({threads},1,1), grid (cdiv(n,{tile}),1,1), {shared_txt}.
// state: cdiv(n,{tile})+1 u64 words, all zero before the launch: state[0] low half =
// tile ticket counter, state[1+t] = status of tile t (high half: 0 not ready, 1 aggregate,
// 2 inclusive prefix; low half: the float's bits).
//
// Tile = {tile} elements, staged in shared memory by cp.async; warp w owns elements
// w*{per_warp} .. w*{per_warp}+{per_warp - 1} of it, as {c} chunks of 128: lane l copies, and later reads back,
// elements 4l..4l+3 of each chunk (16 bytes; coalesced in global memory, conflict-free in
// shared memory). Reduce first (the tile's aggregate is published before any scan work), then
// look back (warp 0) while the other warps scan their chunk sums, then scan and store.
//
.version 8.0
.target sm_90
.address_size 64

{module_decl}.visible .entry scan_inclusive(
    .param .u64 scan_inclusive_param_x,
    .param .u64 scan_inclusive_param_y,
    .param .u64 scan_inclusive_param_state,
    .param .u32 scan_inclusive_param_n
)
.maxntid {threads}, 1, 1
.minnctapersm {minb}
{{
    .reg .pred  %q, %full, %lane0, %valid0, %busy, %found, %mine;
    .reg .b32   %thread, %lane, %warp, %tile, %ticket, %window, %look0, %tmp, %sa, %csize;
    .reg .b32   %flag0, %bits0, %ballot0, %upto0, %bits, %flag;
    .reg .b64   %x, %y, %state, %status, %n, %tile_base, %idx, %left, %px, %py, %word, %at;
    .reg .b64   %word0, %sa0, %rem, %src;
    .reg .f32   %e<{4 * c}>;                     // e[4*j + k]: element k of this thread's chunk j
    .reg .f32   %s<{c}>;                      // chunk j: this lane's sum, then the lanes' inclusive scan
    .reg .f32   %before<{c}>;                 // chunk j: sum of everything before this lane
    .reg .f32   %total<{c}>, %t<{c}>, %add<{c}>, %w<{nw}>;
    .reg .f32   %fz, %thread_sum, %warp_sum, %running, %warp_before, %tile_total, %exclusive;
    .reg .f32   %val, %offset;
    {smem_decl}
    .shared .align 4  .u32 tile_s;
    .shared .align 16 .f32 warp_total_s[{max(nw, 4)}];
    .shared .align 4  .f32 tile_prefix_s;

    ld.param.u64        %x, [scan_inclusive_param_x];
    ld.param.u64        %y, [scan_inclusive_param_y];
    ld.param.u64        %state, [scan_inclusive_param_state];
    ld.param.s32        %n, [scan_inclusive_param_n];
    cvta.to.global.u64  %x, %x;
    cvta.to.global.u64  %y, %y;
    cvta.to.global.u64  %state, %state;
    add.s64             %status, %state, 8;
    mov.u32             %thread, %tid.x;
    and.b32             %lane, %thread, 31;
    shr.u32             %warp, %thread, 5;
    setp.eq.u32         %lane0, %lane, 0;
    mov.f32             %fz, {ZERO};

    // Take a tile in launch order (not ctaid: the scheduler may start blocks in any order,
    // and look-back only cannot deadlock when every predecessor tile is already running).
    setp.ne.u32         %q, %thread, 0;
    @%q bra             HAVE_TICKET;
    atom.global.add.u32 %ticket, [%state], 1;
    st.shared.u32       [tile_s], %ticket;
HAVE_TICKET:
    bar.sync            0;
    ld.shared.u32       %tile, [tile_s];
    mul.wide.u32        %tile_base, %tile, {tile};
    setp.ge.s64         %q, %tile_base, %n;
    @%q bra             DONE;               // n = 0 (one block still runs): nothing to do

    // idx = tile_base + warp*{per_warp} + lane*4; px/py/sa point at this thread's chunk 0
    mul.wide.u32        %idx, %warp, {per_warp};
    mul.wide.u32        %at, %lane, 4;
    add.s64             %idx, %idx, %at;
    cvt.u32.u64         %sa, %idx;
    shl.b32             %sa, %sa, 2;
    mov.u32             %tmp, tile_smem;
    add.u32             %sa, %sa, %tmp;     // shared address of this thread's chunk 0
    add.s64             %idx, %idx, %tile_base;
    shl.b64             %at, %idx, 2;
    add.s64             %px, %x, %at;
    add.s64             %py, %y, %at;
    sub.s64             %left, %n, %idx;    // elements from idx to the end (may be <= 0)
    add.s64             %at, %tile_base, {tile};
    setp.le.s64         %full, %at, %n;
    @!%full bra         COPY_TAIL;
""")
    for j in range(c):
        a(f"    cp.async.cg.shared.global [%sa+{512 * j}], [%px+{512 * j}], 16;")
    a("    bra                 COPIED;\n")
    a("COPY_TAIL:")
    a("    // the last tile: a chunk with k < 4 elements left copies 4k bytes and the rest of its")
    a("    // 16 is zero-filled (zero adds nothing to the sums); none left: 16 zero bytes, and the")
    a("    // source is x itself, nothing of it read")
    for j in range(c):
        a(f"    sub.s64             %rem, %left, {128 * j};")
        a("    min.s64             %rem, %rem, 4;")
        a("    max.s64             %rem, %rem, 0;")
        a("    cvt.u32.u64         %csize, %rem;")
        a("    shl.b32             %csize, %csize, 2;")
        a("    setp.ne.u32         %q, %csize, 0;")
        a(f"    add.s64             %src, %px, {512 * j};")
        a("    selp.b64            %src, %src, %x, %q;")
        a(f"    cp.async.cg.shared.global [%sa+{512 * j}], [%src], 16, %csize;")
    a("""
COPIED:
    cp.async.commit_group;
    cp.async.wait_group 0;                  // this thread's own copies have landed

    // pass 1: each chunk's sum, the thread's sum, the warp's sum (butterfly: lane 0's is used)""")
    for j in range(c):
        es = ", ".join(f"%e{4 * j + k}" for k in range(4))
        a(f"    ld.shared.v4.f32    {{{es}}}, [%sa+{512 * j}];")
    for j in range(c):
        a(f"    add.f32             %s{j}, %e{4 * j}, %e{4 * j + 1};")
        a(f"    add.f32             %s{j}, %s{j}, %e{4 * j + 2};")
        a(f"    add.f32             %s{j}, %s{j}, %e{4 * j + 3};")
    a("    mov.f32             %thread_sum, %s0;")
    for j in range(1, c):
        a(f"    add.f32             %thread_sum, %thread_sum, %s{j};")
    a("    mov.f32             %warp_sum, %thread_sum;")
    for d in (16, 8, 4, 2, 1):
        a(f"    shfl.sync.bfly.b32  %val, %warp_sum, {d}, 0x1f, 0xffffffff;")
        a("    add.f32             %warp_sum, %warp_sum, %val;")
    a("""    @!%lane0 bra        WARP_SUM_STORED;
    mov.u32             %look0, warp_total_s;
    shl.b32             %bits, %warp, 2;
    add.u32             %look0, %look0, %bits;
    st.shared.f32       [%look0], %warp_sum;
WARP_SUM_STORED:
    bar.sync            0;""")
    a(
        f"    // every thread adds the {nw} warp sums in the same order, so all agree on the tile total"
    )
    for i in range((nw + 3) // 4):
        ws = ", ".join(f"%w{4 * i + k}" if 4 * i + k < nw else "_" for k in range(4))
        a(f"    ld.shared.v4.f32    {{{ws}}}, [warp_total_s+{16 * i}];")
    a(f"    mov.f32             %warp_before, {ZERO};")
    a("    mov.f32             %tile_total, %w0;")
    for i in range(nw):
        if i > 0:
            a(f"    add.f32             %tile_total, %tile_total, %w{i};")
        if i < nw - 1:
            a(f"    setp.gt.u32         %q, %warp, {i};")
            a(f"    @%q add.f32         %warp_before, %warp_before, %w{i};")
    a(f"""
    // ---- decoupled look-back: warp 0 finds the sum of every tile before this one; the
    // other warps go straight to their chunk scans ----
    setp.ne.u32         %q, %warp, 0;
    @%q bra             LOCAL_SCAN;
    mov.f32             %exclusive, {ZERO};
    mul.wide.u32        %at, %tile, 8;
    add.s64             %at, %status, %at;  // &status[tile]
    setp.eq.u32         %q, %tile, 0;
    @%q bra             PUBLISH_PREFIX;     // tile 0: its aggregate is its inclusive prefix

    // publish the aggregate at once, so later tiles need not wait for our look-back;
    // flag and value in one 64-bit store: a reader sees both or neither
    mov.b32             %bits, %tile_total;
    mov.b32             %flag, 1;
    mov.b64             %word, {{%bits, %flag}};
    @%lane0 st.relaxed.gpu.global.b64 [%at], %word;
    sub.u32             %window, %tile, 1;  // lane l looks at tile window - l
LOOK_WINDOW:
    sub.s32             %look0, %window, %lane;
    setp.ge.s32         %valid0, %look0, 0;
    mul.wide.s32        %sa0, %look0, 8;
    add.s64             %sa0, %status, %sa0;
LOOK_SPIN:
    // lanes before tile 0 read as "inclusive prefix 0"; tile 0 itself always is one
    mov.b64             %word0, 0x0000000200000000;
    @%valid0 ld.relaxed.gpu.global.b64 %word0, [%sa0];
    mov.b64             {{%bits0, %flag0}}, %word0;
    setp.eq.u32         %q, %flag0, 0;
    vote.sync.any.pred  %busy, %q, 0xffffffff;
    @%busy bra          LOOK_SPIN;          // some tile of the window has published nothing yet
    setp.eq.u32         %q, %flag0, 2;
    vote.sync.ballot.b32 %ballot0, %q, 0xffffffff;
    // lanes up to the nearest inclusive prefix (all 32 when there is none) contribute:
    // upto = (lowest set bit << 1) - 1, which is all ones when the ballot is 0
    neg.s32             %tmp, %ballot0;
    and.b32             %tmp, %tmp, %ballot0;
    shl.b32             %upto0, %tmp, 1;
    sub.u32             %upto0, %upto0, 1;
    shr.u32             %tmp, %upto0, %lane;
    and.b32             %tmp, %tmp, 1;
    setp.ne.u32         %mine, %tmp, 0;
    mov.b32             %val, %bits0;
    selp.f32            %val, %val, {ZERO}, %mine;""")
    for d in (16, 8, 4, 2, 1):
        a(f"    shfl.sync.bfly.b32  %t0, %val, {d}, 0x1f, 0xffffffff;")
        a("    add.f32             %val, %val, %t0;")
    a("""    add.f32             %exclusive, %exclusive, %val;
    setp.ne.u32         %found, %ballot0, 0;
    @%found bra         PUBLISH_PREFIX;
    sub.s32             %window, %window, 32;
    bra                 LOOK_WINDOW;

PUBLISH_PREFIX:
    add.f32             %val, %exclusive, %tile_total;
    mov.b32             %bits, %val;
    mov.b32             %flag, 2;
    mov.b64             %word, {%bits, %flag};
    @%lane0 st.relaxed.gpu.global.b64 [%at], %word;
    @%lane0 st.shared.f32 [tile_prefix_s], %exclusive;

LOCAL_SCAN:
    // inclusive scan of the lanes' chunk sums across the warp, the chunks interleaved so that
    // independent shuffles are in flight; the shuffle's predicate is false below lane d""")
    for d in (1, 2, 4, 8, 16):
        for j in range(c):
            a(f"    shfl.sync.up.b32    %t{j}|%q, %s{j}, {d}, 0, 0xffffffff;")
            a(f"    @%q add.f32         %s{j}, %s{j}, %t{j};")
    a("\n    // before[j]: the lanes below this one (lane 0: nothing); total[j]: lane 31's sum")
    for j in range(c):
        a(f"    shfl.sync.up.b32    %t{j}|%q, %s{j}, 1, 0, 0xffffffff;")
        a(f"    selp.f32            %before{j}, %t{j}, {ZERO}, %q;")
    for j in range(c):
        a(f"    shfl.sync.idx.b32   %total{j}, %s{j}, 31, 0x1f, 0xffffffff;")
    a("    // chunk j comes after chunks 0..j-1 of the same warp")
    a("    mov.f32             %running, %total0;")
    for j in range(1, c):
        a(f"    add.f32             %before{j}, %before{j}, %running;")
        if j < c - 1:
            a(f"    add.f32             %running, %running, %total{j};")
    a("""    bar.sync            0;
    ld.shared.f32       %offset, [tile_prefix_s];
    add.f32             %offset, %offset, %warp_before;""")
    for j in range(c):
        a(f"    add.f32             %add{j}, %offset, %before{j};")

    def pass2(tail: bool) -> None:
        for j in range(c):
            es = ", ".join(f"%e{4 * j + k}" for k in range(4))
            a(f"    ld.shared.v4.f32    {{{es}}}, [%sa+{512 * j}];")
            a(f"    add.f32             %e{4 * j}, %add{j}, %e{4 * j};")
            for k in (1, 2, 3):
                a(f"    add.f32             %e{4 * j + k}, %e{4 * j + k - 1}, %e{4 * j + k};")
            if not tail:
                a(f"    st.global.v4.f32    [%py+{512 * j}], {{{es}}};")
            else:
                for k in range(4):
                    a(f"    setp.gt.s64         %q, %left, {128 * j + k};")
                    a(f"    @%q st.global.f32   [%py+{512 * j + 4 * k}], %e{4 * j + k};")

    a("    // pass 2: read the chunks again, scan each one's four floats with its offset, store")
    a("    @!%full bra         STORE_TAIL;")
    pass2(False)
    a("    bra                 DONE;\n")
    a("STORE_TAIL:")
    pass2(True)
    a("\nDONE:\n    ret;\n}\n")
    return "\n".join(L)


def cuda(nw: int, c: int, minb: int, dyn: bool = False) -> str:
    threads, tile = nw * 32, nw * c * 128
    if dyn:
        cu_decl = "extern __shared__ float4 tile_smem[];  // TILE floats: dynamic (above 48 KB)"
        cu_launch = f", {tile * 4} bytes of dynamic shared memory"
    else:
        cu_decl = "__shared__ float4 tile_smem[TILE / 4];"
        cu_launch = ""
    return f"""// Inclusive prefix sum y[i] = x[0] + ... + x[i] of float32, in ONE pass over memory: a
// single-pass scan with decoupled look-back (Merrill & Garland 2016, the algorithm of CUB's
// DeviceScan), the same algorithm as the hand-written PTX, written as idiomatic CUDA.
// Launch: block {threads}, grid cdiv(n, {tile}){cu_launch}; `state` holds cdiv(n, {tile}) + 1 words and must be
// zero before the launch (a cudaMemsetAsync of the workspace).
//
// Each block scans one {tile}-element tile, staged in shared memory with cp.async
// (__pipeline_memcpy_async, zero-filled past n) so that the tile costs no registers while the
// block waits for its look-back: a warp owns {c * 128} consecutive elements ({c} chunks of 128, lane l
// elements 4l..4l+3 of each), and each thread reads back only what it copied. Reduce first:
// the block's total is published at once as an "aggregate"; warp 0 then walks back over its
// predecessors' published values, 32 per round trip, until it meets an "inclusive prefix",
// and publishes its own, while the other warps scan their chunk sums. Then every thread scans
// its chunks from shared memory again and stores them. Tiles are handed out in launch order
// by an atomic counter (state[0]), so every predecessor of a tile is already running.
#include <cuda/atomic>
#include <cuda_pipeline.h>

#define THREADS {threads}
#define CHUNKS {c}
#define TILE (THREADS * CHUNKS * 4)
#define FLAG_AGGREGATE 1ull
#define FLAG_PREFIX 2ull

__device__ __forceinline__ unsigned long long pack(unsigned long long flag, float v) {{
    return (flag << 32) | __float_as_uint(v);
}}

// flag and value travel in one 64-bit word: a reader sees both or neither
__device__ __forceinline__ void publish(unsigned long long* word, unsigned long long v) {{
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*word).store(
        v, cuda::memory_order_relaxed);
}}

__device__ __forceinline__ unsigned long long peek(unsigned long long* word) {{
    return cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*word).load(
        cuda::memory_order_relaxed);
}}

__global__ void __launch_bounds__(THREADS, {minb}) scan_inclusive(const float* x, float* y,
                                                          unsigned long long* state, int n) {{
    {cu_decl}
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

    if (full) {{
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) __pipeline_memcpy_async(mine + j * 32, x + base + j * 128, 16);
    }} else {{  // the last tile: 4k bytes of a chunk with k < 4 elements left, zero-filled
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {{
            long long left = n - (base + j * 128);
            int bytes = left >= 4 ? 16 : left > 0 ? (int)left * 4 : 0;
            __pipeline_memcpy_async(mine + j * 32, bytes ? x + base + j * 128 : x, 16, 16 - bytes);
        }}
    }}
    __pipeline_commit();
    __pipeline_wait_prior(0);  // this thread's own copies have landed

    // pass 1: chunk sums, the thread's sum, the warp's sum
    float s[CHUNKS], thread_sum = 0.0f;
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {{
        float4 q = mine[j * 32];
        s[j] = q.x + q.y + q.z + q.w;
        thread_sum += s[j];
    }}
    float warp_sum = thread_sum;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) warp_sum += __shfl_xor_sync(0xffffffffu, warp_sum, d);
    if (lane == 0) warp_total_s[warp] = warp_sum;
    __syncthreads();
    // every thread adds the warp totals in the same order: the same tile total everywhere
    float warp_before = 0.0f, tile_total = 0.0f;
#pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) {{
        float t = warp_total_s[w];
        if (w < warp) warp_before += t;
        tile_total += t;
    }}

    // decoupled look-back, by warp 0
    if (warp == 0) {{
        float exclusive = 0.0f;
        if (tile == 0) {{
            if (lane == 0) publish(&status[0], pack(FLAG_PREFIX, tile_total));
        }} else {{
            if (lane == 0) publish(&status[tile], pack(FLAG_AGGREGATE, tile_total));
            int window = tile - 1;  // lane l looks at tile window - l
            while (true) {{
                int t = window - lane;
                unsigned long long word;
                do {{
                    word = t >= 0 ? peek(&status[t]) : pack(FLAG_PREFIX, 0.0f);
                }} while (__any_sync(0xffffffffu, (word >> 32) == 0));
                unsigned prefix_lanes = __ballot_sync(0xffffffffu, (word >> 32) == FLAG_PREFIX);
                // lanes up to and including the nearest inclusive prefix contribute
                int stop = prefix_lanes ? __ffs(prefix_lanes) - 1 : 31;
                float val = lane <= stop ? __uint_as_float((unsigned)word) : 0.0f;
#pragma unroll
                for (int d = 16; d > 0; d >>= 1) val += __shfl_xor_sync(0xffffffffu, val, d);
                exclusive += val;
                if (prefix_lanes) break;
                window -= 32;
            }}
            if (lane == 0) publish(&status[tile], pack(FLAG_PREFIX, exclusive + tile_total));
        }}
        if (lane == 0) tile_prefix_s = exclusive;
    }}

    // every warp (warp 0 after its look-back): scan the chunk sums across the lanes
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {{
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {{
            float t = __shfl_up_sync(0xffffffffu, s[j], d);
            if (lane >= d) s[j] += t;
        }}
    }}
    float before[CHUNKS], running = 0.0f;
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {{
        float up = __shfl_up_sync(0xffffffffu, s[j], 1);
        before[j] = (lane == 0 ? 0.0f : up) + running;
        running += __shfl_sync(0xffffffffu, s[j], 31);
    }}
    __syncthreads();
    const float offset = tile_prefix_s + warp_before;

    // pass 2: scan each chunk's four floats with its offset, store
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {{
        float4 q = mine[j * 32];
        long long i = base + j * 128;
        float o0 = offset + before[j] + q.x;
        float o1 = o0 + q.y, o2 = o1 + q.z, o3 = o2 + q.w;
        if (full) {{
            *reinterpret_cast<float4*>(y + i) = make_float4(o0, o1, o2, o3);
        }} else {{
            if (i < n) y[i] = o0;
            if (i + 1 < n) y[i + 1] = o1;
            if (i + 2 < n) y[i + 2] = o2;
            if (i + 3 < n) y[i + 3] = o3;
        }}
    }}
}}
"""


def spec(nw: int, c: int, stem: str, dyn: bool = False) -> dict:
    tile = nw * c * 128
    s = json.loads((ROOT / "fewshot/kernels/scan_inclusive/spec.json").read_text())
    for p in s["params"]:
        if p["name"] == "state":
            p["length"] = f"cdiv(n, {tile}) + 1"
    shared = str(tile * 4) if dyn else "0"
    s["launch"] = {"grid": f"cdiv(n, {tile})", "block": str(nw * 32), "shared": shared}
    # the sizes around the tile edge and around the last chunks' 16-byte pieces too
    s["sizes"] = sorted(set(s["sizes"]) | {tile - 1, tile, tile + 1, 2 * tile + 3, 3 * tile + 130})
    s["reference"] = f"{stem}.cu"
    s["origin"] = [f"bench/tuning/{stem}.spec.json"]
    return s


# (warps per block, chunks of 4 floats per thread, blocks per SM asked of ptxas with
#  .minnctapersm: the register cap, tile in dynamic shared memory)
CANDIDATES = {
    "scan_inclusive_vs4c8": (4, 8, 12, False),  # tile 4096, 16 KB shared, 12 blocks of 128 per SM
    "scan_inclusive_vs8c8": (8, 8, 6, False),  # tile 8192, 32 KB shared, 6 blocks of 256 per SM
    "scan_inclusive_vs16c8": (16, 8, 3, True),  # tile 16384, 64 KB dynamic, 3 blocks of 512 per SM
}

if __name__ == "__main__":
    for stem, (nw, c, minb, dyn) in CANDIDATES.items():
        (HERE / f"{stem}.ptx").write_text(ptx(nw, c, minb, dyn))
        (HERE / f"{stem}.cu").write_text(cuda(nw, c, minb, dyn))
        (HERE / f"{stem}.spec.json").write_text(json.dumps(spec(nw, c, stem, dyn), indent=2) + "\n")
        print(stem)
