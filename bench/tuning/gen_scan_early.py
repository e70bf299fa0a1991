"""Writes the early-look-back scan_inclusive candidates (PTX, CUDA reference, spec) into
bench/tuning/.

The PTX is written here by hand, as text (no compiler involved); this file is gen_scan.py's
kernel with one change: the look-back runs in a warp of its own (block = data warps + 1), which
starts walking back over the predecessors' status words as soon as the block has its ticket,
while the data warps' loads are in flight. It publishes the tile's aggregate as soon as the data
warps hand over the total (a flag in shared memory that it polls in its spin loop) and the
inclusive prefix once both are known, so the data warps wait at the barrier for
max(look-back, their own work) instead of their own work + the look-back. Nsight Compute on
the one-tile-per-block candidates (call 1): 56 % of the cycles between a warp's instructions at
the barrier behind warp 0's look-back, DRAM at 50-60 %.

    python3 bench/tuning/gen_scan_early.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ZERO = "0f00000000"


def ptx(nw: int, c: int, wl: int, minb: int) -> str:
    threads, tile, per_warp = nw * 32, nw * c * 128, c * 128
    all_threads = threads + 32
    L: list[str] = []
    a = L.append
    a(f"""//
// scan_inclusive: y[i] = x[0] + ... + x[i], float32, single pass with decoupled look-back.
// Hand-written for the ptxls few-shot library (not compiler output).
// Launch: block ({all_threads},1,1), grid (cdiv(n,{tile}),1,1). state: cdiv(n,{tile})+1 u64 words, all
// zero before the launch: state[0] low half = tile ticket counter, state[1+t] = status of
// tile t (high half: 0 not ready, 1 aggregate, 2 inclusive prefix; low half: the float's bits).
//
// Tile = {tile} elements; warp w owns elements w*{per_warp} .. w*{per_warp}+{per_warp - 1} of it, as {c} chunks of
// 128: lane l holds x[chunk + 4l .. 4l+3] from one 16-byte load per chunk (coalesced).
// Warps 0..{nw - 1} hold the data; warp {nw} does only the look-back, and starts it as soon as the
// block has its ticket: while the tile's loads are in flight it walks back over its
// predecessors' status words ({32 * wl} per L2 round trip: lane l reads tiles window - l{" and window - 32 - l" if wl == 2 else ""}),
// publishing the tile's aggregate as soon as the data warps have its total (a flag in shared
// memory it polls while it spins), and the inclusive prefix once both are known. (With the
// look-back in warp 0 after the tile total, the whole block waited for it at the barrier:
// Nsight Compute, 56 % of the cycles between a warp's instructions.)
//
.version 8.0
.target sm_90
.address_size 64

.visible .entry scan_inclusive(
    .param .u64 scan_inclusive_param_x,
    .param .u64 scan_inclusive_param_y,
    .param .u64 scan_inclusive_param_state,
    .param .u32 scan_inclusive_param_n
)
.maxntid {all_threads}, 1, 1
.minnctapersm {minb}
{{
    .reg .pred  %q, %full, %lane0, %valid0, %valid1, %busy, %found, %found0, %mine, %agg_done;
    .reg .b32   %thread, %lane, %warp, %tile, %ticket, %window, %look0, %tmp, %ready;
    .reg .b32   %flag0, %flag1, %bits0, %bits1, %ballot0, %ballot1, %upto0, %upto1, %bits, %flag;
    .reg .b64   %x, %y, %state, %status, %n, %tile_base, %idx, %left, %px, %py, %word, %at;
    .reg .b64   %word0, %word1, %sa0;
    .reg .f32   %v<{4 * c}>;                     // v[4*j + k]: element k of this thread's chunk j
    .reg .f32   %s<{c}>;                      // chunk j: inclusive scan of the lane sums
    .reg .f32   %before<{c}>;                 // chunk j: sum of everything before this lane
    .reg .f32   %total<{c}>;                  // chunk j: the warp's sum of chunk j
    .reg .f32   %t<{c}>, %w<{nw}>, %add<{c}>;
    .reg .f32   %warp_sum, %warp_before, %tile_total, %exclusive, %val, %val1, %offset;
    .shared .align 4  .u32 tile_s;
    .shared .align 16 .f32 warp_total_s[{nw}];
    .shared .align 4  .f32 tile_prefix_s;
    .shared .align 4  .f32 tile_total_s;
    .shared .align 4  .u32 ready_s;      // 1 once tile_total_s holds the tile's total

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

    // Take a tile in launch order (not ctaid: the scheduler may start blocks in any order,
    // and look-back only cannot deadlock when every predecessor tile is already running).
    setp.ne.u32         %q, %thread, 0;
    @%q bra             HAVE_TICKET;
    atom.global.add.u32 %ticket, [%state], 1;
    st.shared.u32       [tile_s], %ticket;
    st.shared.u32       [ready_s], 0;
HAVE_TICKET:
    bar.sync            0;
    ld.shared.u32       %tile, [tile_s];
    mul.wide.u32        %tile_base, %tile, {tile};
    setp.ge.s64         %q, %tile_base, %n;
    @%q bra             DONE;               // n = 0 (one block still runs): nothing to do
    setp.eq.u32         %q, %warp, {nw};
    @%q bra             LOOKBACK_WARP;

    // idx = tile_base + warp*{per_warp} + lane*4; px/py point at this thread's chunk 0
    mul.wide.u32        %idx, %warp, {per_warp};
    add.s64             %idx, %idx, %tile_base;
    mul.wide.u32        %at, %lane, 4;
    add.s64             %idx, %idx, %at;
    shl.b64             %at, %idx, 2;
    add.s64             %px, %x, %at;
    add.s64             %py, %y, %at;
    sub.s64             %left, %n, %idx;    // elements from idx to the end (may be <= 0)
    add.s64             %at, %tile_base, {tile};
    setp.le.s64         %full, %at, %n;
    @!%full bra         LOAD_TAIL;
""")
    for j in range(c):
        vs = ", ".join(f"%v{4 * j + k}" for k in range(4))
        a(f"    ld.global.nc.v4.f32 {{{vs}}}, [%px+{512 * j}];")
    a("    bra                 LOADED;\n")
    a("LOAD_TAIL:")
    a("    // the last tile: element by element, zero past n (zero adds nothing to the sums)")
    for i in range(4 * c):
        a(f"    mov.f32             %v{i}, {ZERO};")
    for j in range(c):
        for k in range(4):
            a(f"    setp.gt.s64         %q, %left, {128 * j + k};")
            a(f"    @%q ld.global.nc.f32 %v{4 * j + k}, [%px+{512 * j + 4 * k}];")
    a("\nLOADED:")
    a("    // scan inside each chunk's four elements")
    for j in range(c):
        for k in (1, 2, 3):
            a(f"    add.f32             %v{4 * j + k}, %v{4 * j + k}, %v{4 * j + k - 1};")
    a("""
    // inclusive scan of the lane sums across the warp, the chunks interleaved so that
    // independent shuffles are in flight; the shuffle's predicate is false below lane d""")
    for j in range(c):
        a(f"    mov.f32             %s{j}, %v{4 * j + 3};")
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
    a("    mov.f32             %warp_sum, %total0;")
    for j in range(1, c):
        a(f"    add.f32             %before{j}, %before{j}, %warp_sum;")
        a(f"    add.f32             %warp_sum, %warp_sum, %total{j};")
    a(f"""
    @!%lane0 bra        WARP_SUM_STORED;
    mov.u32             %look0, warp_total_s;
    shl.b32             %bits, %warp, 2;
    add.u32             %look0, %look0, %bits;
    st.shared.f32       [%look0], %warp_sum;
WARP_SUM_STORED:
    bar.sync            1, {threads};       // the data warps only""")
    a(
        f"    // every thread adds the {nw} warp sums in the same order, so all agree on the tile total"
    )
    for i in range(nw // 4):
        ws = ", ".join(f"%w{4 * i + k}" for k in range(4))
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
    // hand the tile total to the look-back warp
    setp.ne.u32         %q, %thread, 0;
    @%q bra             PREFIX_WAIT;
    st.volatile.shared.f32 [tile_total_s], %tile_total;
    membar.cta;
    st.volatile.shared.u32 [ready_s], 1;
PREFIX_WAIT:
    bar.sync            2, {all_threads};       // the look-back warp has the prefix
""")
    a("""    ld.shared.f32       %offset, [tile_prefix_s];
    add.f32             %offset, %offset, %warp_before;""")
    for j in range(c):
        a(f"    add.f32             %add{j}, %offset, %before{j};")
    for j in range(c):
        for k in range(4):
            a(f"    add.f32             %v{4 * j + k}, %add{j}, %v{4 * j + k};")
    a("    @!%full bra         STORE_TAIL;")
    for j in range(c):
        vs = ", ".join(f"%v{4 * j + k}" for k in range(4))
        a(f"    st.global.v4.f32    [%py+{512 * j}], {{{vs}}};")
    a("    bra                 DONE;\n")
    a("STORE_TAIL:")
    for j in range(c):
        for k in range(4):
            a(f"    setp.gt.s64         %q, %left, {128 * j + k};")
            a(f"    @%q st.global.f32   [%py+{512 * j + 4 * k}], %v{4 * j + k};")
    a(f"""
    bra.uni             DONE;               // (the tail's stores end here too)

    // ---- decoupled look-back: warp {nw} finds the sum of every tile before this one ----
LOOKBACK_WARP:
    mov.f32             %exclusive, {ZERO};
    setp.ne.u32         %agg_done, %lane, %lane;   // false: the aggregate is not out yet
    mul.wide.u32        %at, %tile, 8;
    add.s64             %at, %status, %at;  // &status[tile]
    setp.eq.u32         %q, %tile, 0;
    @%q bra             PUBLISH_PREFIX;     // tile 0: its total is its inclusive prefix
    sub.u32             %window, %tile, 1;  // lane l looks at tile window - l
LOOK_WINDOW:
    sub.s32             %look0, %window, %lane;
    setp.ge.s32         %valid0, %look0, 0;
    mul.wide.s32        %sa0, %look0, 8;
    add.s64             %sa0, %status, %sa0;""")
    if wl == 2:
        a(
            """    setp.ge.s32         %valid1, %look0, 32;    // and tile window - 32 - l, 256 bytes lower"""
        )
    a("""LOOK_SPIN:
    // once the data warps have the tile total, publish it as the aggregate, so later tiles
    // need not wait for this look-back; flag and value in one 64-bit store
    @%agg_done bra      AGG_OUT;
    ld.volatile.shared.u32 %ready, [ready_s];
    setp.eq.u32         %q, %ready, 0;
    @%q bra             AGG_OUT;
    membar.cta;
    ld.volatile.shared.f32 %tile_total, [tile_total_s];
    mov.b32             %bits, %tile_total;
    mov.b32             %flag, 1;
    mov.b64             %word, {%bits, %flag};
    @%lane0 st.relaxed.gpu.global.b64 [%at], %word;
    setp.eq.u32         %agg_done, %lane, %lane;
AGG_OUT:
    // lanes before tile 0 read as "inclusive prefix 0"; tile 0 itself always is one
    mov.b64             %word0, 0x0000000200000000;
    @%valid0 ld.relaxed.gpu.global.b64 %word0, [%sa0];""")
    if wl == 2:
        a("""    mov.b64             %word1, 0x0000000200000000;
    @%valid1 ld.relaxed.gpu.global.b64 %word1, [%sa0+-256];""")
    a("""    mov.b64             {%bits0, %flag0}, %word0;
    setp.eq.u32         %q, %flag0, 0;
    vote.sync.any.pred  %busy, %q, 0xffffffff;
    @%busy bra          LOOK_SPIN;          // some tile of the window has published nothing yet
    setp.eq.u32         %q, %flag0, 2;
    vote.sync.ballot.b32 %ballot0, %q, 0xffffffff;
    setp.ne.u32         %found0, %ballot0, 0;""")
    if wl == 2:
        a("""    // the far 32 matter only when the near 32 hold no inclusive prefix
    mov.b64             {%bits1, %flag1}, %word1;
    mov.b32             %ballot1, 0;
    @%found0 bra        LOOK_SUM;
    setp.eq.u32         %q, %flag1, 0;
    vote.sync.any.pred  %busy, %q, 0xffffffff;
    @%busy bra          LOOK_SPIN;
    setp.eq.u32         %q, %flag1, 2;
    vote.sync.ballot.b32 %ballot1, %q, 0xffffffff;
LOOK_SUM:""")
    a(f"""    // lanes up to the nearest inclusive prefix (all 32 when there is none) contribute:
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
    if wl == 2:
        a(f"""    neg.s32             %tmp, %ballot1;
    and.b32             %tmp, %tmp, %ballot1;
    shl.b32             %upto1, %tmp, 1;
    sub.u32             %upto1, %upto1, 1;
    selp.b32            %upto1, 0, %upto1, %found0;   // none of the far 32 past a near prefix
    shr.u32             %tmp, %upto1, %lane;
    and.b32             %tmp, %tmp, 1;
    setp.ne.u32         %mine, %tmp, 0;
    mov.b32             %val1, %bits1;
    selp.f32            %val1, %val1, {ZERO}, %mine;
    add.f32             %val, %val, %val1;
    or.b32              %ballot0, %ballot0, %ballot1;""")
    for d in (16, 8, 4, 2, 1):
        a(f"    shfl.sync.bfly.b32  %t0, %val, {d}, 0x1f, 0xffffffff;")
        a("    add.f32             %val, %val, %t0;")
    a(f"""    add.f32             %exclusive, %exclusive, %val;
    setp.ne.u32         %found, %ballot0, 0;
    @%found bra         PUBLISH_PREFIX;
    sub.s32             %window, %window, {32 * wl};
    bra                 LOOK_WINDOW;

PUBLISH_PREFIX:
    // the prefix is known; wait for the tile total
    ld.volatile.shared.u32 %ready, [ready_s];
    setp.eq.u32         %q, %ready, 0;
    @%q bra             PUBLISH_PREFIX;
    membar.cta;
    ld.volatile.shared.f32 %tile_total, [tile_total_s];
    add.f32             %val, %exclusive, %tile_total;
    mov.b32             %bits, %val;
    mov.b32             %flag, 2;
    mov.b64             %word, {{%bits, %flag}};
    @%lane0 st.relaxed.gpu.global.b64 [%at], %word;
    @%lane0 st.shared.f32 [tile_prefix_s], %exclusive;
    bar.sync            2, {all_threads};
    bra.uni             DONE;
""")
    a("\nDONE:\n    ret;\n}\n")
    return "\n".join(L)


def cuda(nw: int, c: int, wl: int, minb: int) -> str:
    threads, tile = nw * 32, nw * c * 128
    all_threads = threads + 32
    far = ""
    if wl == 2:
        far = """
                unsigned long long word1 = pack(FLAG_PREFIX, 0.0f);
                if (!prefix_lanes) {  // the far 32 matter only without a near prefix
                    do {
                        word1 = t - 32 >= 0 ? peek(&status[t - 32]) : pack(FLAG_PREFIX, 0.0f);
                    } while (__any_sync(0xffffffffu, (word1 >> 32) == 0));
                }
                unsigned far_lanes = prefix_lanes ? 0u : __ballot_sync(0xffffffffu, (word1 >> 32) == FLAG_PREFIX);
                int stop1 = prefix_lanes ? -1 : far_lanes ? __ffs(far_lanes) - 1 : 31;
                val += lane <= stop1 ? __uint_as_float((unsigned)word1) : 0.0f;
                prefix_lanes |= far_lanes;"""
    return f"""// Inclusive prefix sum y[i] = x[0] + ... + x[i] of float32, in ONE pass over memory: a
// single-pass scan with decoupled look-back (Merrill & Garland 2016, the algorithm of CUB's
// DeviceScan), the same algorithm as kernel.ptx written as idiomatic CUDA.
// Launch: block {all_threads} ({nw} data warps + 1 look-back warp), grid cdiv(n, {tile}); `state` holds cdiv(n, {tile}) + 1 words and must be
// zero before the launch (a cudaMemsetAsync of the workspace).
//
// Each block scans one {tile}-element tile: a warp owns {c * 128} consecutive elements, read as
// {c} coalesced 16-byte loads per thread (chunk j of a warp = elements j*128 .. j*128+127). The
// look-back warp starts walking back over its predecessors' published values ({32 * wl} per round
// trip) as soon as the block has its tile, while the data warps load and scan; it publishes the
// tile's total as an "aggregate" as soon as they hand it over (a flag in shared memory it polls),
// and the tile's inclusive prefix once it meets a predecessor's. Tiles are handed out in launch order by an atomic
// counter (state[0]), so every predecessor of a tile is already running: no deadlock.
#include <cuda/atomic>

#define THREADS {threads}
#define ALL_THREADS {all_threads}
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

__global__ void __launch_bounds__(ALL_THREADS, {minb}) scan_inclusive(const float* x, float* y,
                                                          unsigned long long* state, int n) {{
    __shared__ int tile_s;
    __shared__ float warp_total_s[THREADS / 32];
    __shared__ float tile_prefix_s;
    __shared__ volatile float tile_total_s;
    __shared__ volatile unsigned ready_s;  // 1 once tile_total_s holds the tile's total
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) {{
        tile_s = atomicAdd((unsigned int*)state, 1u);
        ready_s = 0;
    }}
    __syncthreads();
    const int tile = tile_s;
    const long long tile_base = (long long)tile * TILE;
    if (tile_base >= n) return;
    unsigned long long* status = state + 1;

    if (warp == THREADS / 32) {{  // the look-back warp
        float exclusive = 0.0f, tile_total = 0.0f;
        bool agg_done = false;
        if (tile > 0) {{
            int window = tile - 1;  // lane l looks at tile window - l{" (and window - 32 - l)" if wl == 2 else ""}
            while (true) {{
                int t = window - lane;
                unsigned long long word;
                do {{
                    if (!agg_done && ready_s) {{  // the total is in: publish it as the aggregate
                        __threadfence_block();
                        tile_total = tile_total_s;
                        if (lane == 0) publish(&status[tile], pack(FLAG_AGGREGATE, tile_total));
                        agg_done = true;
                    }}
                    word = t >= 0 ? peek(&status[t]) : pack(FLAG_PREFIX, 0.0f);
                }} while (__any_sync(0xffffffffu, (word >> 32) == 0));
                unsigned prefix_lanes = __ballot_sync(0xffffffffu, (word >> 32) == FLAG_PREFIX);
                // lanes up to and including the nearest inclusive prefix contribute
                int stop = prefix_lanes ? __ffs(prefix_lanes) - 1 : 31;
                float val = lane <= stop ? __uint_as_float((unsigned)word) : 0.0f;{far}
#pragma unroll
                for (int d = 16; d > 0; d >>= 1) val += __shfl_xor_sync(0xffffffffu, val, d);
                exclusive += val;
                if (prefix_lanes) break;
                window -= {32 * wl};
            }}
        }}
        while (!ready_s) {{
        }}
        __threadfence_block();
        tile_total = tile_total_s;
        if (lane == 0) {{
            publish(&status[tile], pack(FLAG_PREFIX, exclusive + tile_total));
            tile_prefix_s = exclusive;
        }}
        asm volatile("bar.sync 2, %0;" ::"n"(ALL_THREADS));
        return;
    }}

    // load: thread holds v[j][0..3] = x[base + j*128 + lane*4 .. +3], zero past n
    float v[CHUNKS][4];
    const long long base = tile_base + warp * (CHUNKS * 128) + lane * 4;
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {{
        long long i = base + j * 128;
        if (i + 3 < n) {{
            float4 q = __ldg(reinterpret_cast<const float4*>(x + i));
            v[j][0] = q.x; v[j][1] = q.y; v[j][2] = q.z; v[j][3] = q.w;
        }} else {{
#pragma unroll
            for (int k = 0; k < 4; ++k) v[j][k] = (i + k < n) ? __ldg(x + i + k) : 0.0f;
        }}
    }}
    // scan within the thread's four elements of each chunk
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {{
        v[j][1] += v[j][0]; v[j][2] += v[j][1]; v[j][3] += v[j][2];
    }}
    // inclusive scan of the per-thread sums across the warp, per chunk
    float incl[CHUNKS];
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) incl[j] = v[j][3];
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {{
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {{
            float t = __shfl_up_sync(0xffffffffu, incl[j], d);
            if (lane >= d) incl[j] += t;
        }}
    }}
    // what comes before this thread's elements inside the warp's {c * 128}
    float before[CHUNKS], chunk_total[CHUNKS];
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {{
        float up = __shfl_up_sync(0xffffffffu, incl[j], 1);
        before[j] = lane == 0 ? 0.0f : up;
        chunk_total[j] = __shfl_sync(0xffffffffu, incl[j], 31);
    }}
    float warp_running = 0.0f;
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {{
        before[j] += warp_running;
        warp_running += chunk_total[j];
    }}
    if (lane == 0) warp_total_s[warp] = warp_running;
    asm volatile("bar.sync 1, %0;" ::"n"(THREADS));  // the data warps only
    // every thread adds the warp totals in the same order: the same tile total everywhere
    float warp_before = 0.0f, tile_total = 0.0f;
#pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) {{
        float t = warp_total_s[w];
        if (w < warp) warp_before += t;
        tile_total += t;
    }}

    if (threadIdx.x == 0) {{  // hand the tile total to the look-back warp
        tile_total_s = tile_total;
        __threadfence_block();
        ready_s = 1;
    }}
    asm volatile("bar.sync 2, %0;" ::"n"(ALL_THREADS));  // the look-back warp has the prefix
    const float offset = tile_prefix_s + warp_before;

#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {{
        long long i = base + j * 128;
        float add = offset + before[j];
        float o0 = add + v[j][0], o1 = add + v[j][1], o2 = add + v[j][2], o3 = add + v[j][3];
        if (i + 3 < n) {{
            *reinterpret_cast<float4*>(y + i) = make_float4(o0, o1, o2, o3);
        }} else {{
            if (i < n) y[i] = o0;
            if (i + 1 < n) y[i + 1] = o1;
            if (i + 2 < n) y[i + 2] = o2;
        }}
    }}
}}
"""


def spec(nw: int, c: int, stem: str) -> dict:
    tile = nw * c * 128
    s = json.loads((ROOT / "fewshot/kernels/scan_inclusive/spec.json").read_text())
    for p in s["params"]:
        if p["name"] == "state":
            p["length"] = f"cdiv(n, {tile}) + 1"
    s["launch"] = {"grid": f"cdiv(n, {tile})", "block": str(nw * 32 + 32), "shared": "0"}
    s["sizes"] = sorted(set(s["sizes"]) | {tile - 1, tile, tile + 1, 2 * tile + 3})
    s["reference"] = f"{stem}.cu"
    s["origin"] = [f"bench/tuning/{stem}.spec.json"]
    return s


# (data warps per block, chunks of 4 floats per thread, status words per lane per round trip,
#  .minnctapersm)
CANDIDATES = {
    "scan_inclusive_ve8w4c": (8, 4, 1, 5),  # the library's tiles (4096) and window (32), + 1 warp
    "scan_inclusive_ve8w8c": (8, 8, 2, 3),  # tile 8192, window 64, + 1 warp
}

if __name__ == "__main__":
    for stem, (nw, c, wl, minb) in CANDIDATES.items():
        (HERE / f"{stem}.ptx").write_text(ptx(nw, c, wl, minb))
        (HERE / f"{stem}.cu").write_text(cuda(nw, c, wl, minb))
        (HERE / f"{stem}.spec.json").write_text(json.dumps(spec(nw, c, stem), indent=2) + "\n")
        print(stem)
