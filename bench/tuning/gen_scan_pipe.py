"""Writes the software-pipelined scan_inclusive candidates (PTX, CUDA reference, spec) into
bench/tuning/.

The PTX is written here by hand, as text (no compiler involved): this script only repeats the
per-chunk lines. What these candidates change against gen_scan.py's: a block no longer scans
one tile and exits. It stays, and while it scans tile t (its look-back included) the copies of
its next tile are already in flight into a second shared-memory stage (cp.async, 16 bytes per
thread and chunk, zero-filled past n), and the ticket for the tile after that is already being
fetched. The Nsight Compute profile of the one-tile-per-block candidates (call 1) had 56 % of
the cycles between a warp's instructions at the barrier behind warp 0's look-back, with DRAM at
50-60 %: nothing of the block was in flight while it waited. Here each block keeps a tile of
loads in flight through the look-back.

Deadlock: a block holds its current tile t and the tickets of the next two (both > t). The
smallest tile not yet finished is always some block's current tile (a block's other tickets are
larger than its current one), and every tile before it is finished, so its look-back ends.

    python3 bench/tuning/gen_scan_pipe.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ZERO = "0f00000000"


def issue(c: int, tile_reg: str, dst: str, tag: str) -> list[str]:
    """cp.async of this thread's C chunks of tile `tile_reg` into shared `dst`, one group."""
    L = [
        f"    mul.wide.u32        %ibase, {tile_reg}, %TILE%;",
        "    add.s64             %iidx, %ibase, %toff_e;",
        "    shl.b64             %iat, %iidx, 2;",
        "    add.s64             %isrc, %x, %iat;",
        "    add.s64             %iat, %ibase, %TILE%;",
        "    setp.le.s64         %ifull, %iat, %n;",
        f"    @!%ifull bra        ISSUE_TAIL_{tag};",
    ]
    for j in range(c):
        L.append(f"    cp.async.cg.shared.global [{dst}+{512 * j}], [%isrc+{512 * j}], 16;")
    L += [
        f"    bra.uni             ISSUED_{tag};",
        f"ISSUE_TAIL_{tag}:",
        "    // the last tile: a chunk with k < 4 elements left copies 4k bytes, the rest of its",
        "    // 16 is zero-filled (zero adds nothing to the sums); none left: nothing read",
        "    sub.s64             %ileft, %n, %iidx;",
    ]
    for j in range(c):
        L += [
            "    min.s64             %iat, %ileft, 4;"
            if j == 0
            else f"    sub.s64             %iat, %ileft, {128 * j};",
        ]
        if j > 0:
            L.append("    min.s64             %iat, %iat, 4;")
        L += [
            "    max.s64             %iat, %iat, 0;",
            "    cvt.u32.u64         %isize, %iat;",
            "    shl.b32             %isize, %isize, 2;",
            "    setp.ne.u32         %iq, %isize, 0;",
            f"    add.s64             %iat, %isrc, {512 * j};",
            "    selp.b64            %iat, %iat, %x, %iq;",
            f"    cp.async.cg.shared.global [{dst}+{512 * j}], [%iat], 16, %isize;",
        ]
    L.append(f"ISSUED_{tag}:")
    return L


def ptx(nw: int, c: int, wl: int, minb: int) -> str:
    threads, tile, per_warp = nw * 32, nw * c * 128, c * 128
    L: list[str] = []
    a = L.append
    a(f"""//
// scan_inclusive: y[i] = x[0] + ... + x[i], float32, single pass with decoupled look-back.
// Hand-written for the ptxls few-shot library (not compiler output).
// Launch: block ({threads},1,1), grid (min(cdiv(n,{tile}), {132 * minb}),1,1), {2 * tile * 4} bytes of dynamic
// shared memory (two stages of a tile). state: cdiv(n,{tile})+1 u64 words, all zero before
// the launch: state[0] low half = tile ticket counter, state[1+t] = status of tile t (high
// half: 0 not ready, 1 aggregate, 2 inclusive prefix; low half: the float's bits).
//
// Tile = {tile} elements; warp w owns elements w*{per_warp} .. w*{per_warp}+{per_warp - 1} of it, as {c} chunks of
// 128: lane l holds x[chunk + 4l .. 4l+3]. A block scans tile after tile, taken in order by
// an atomic ticket: while it scans tile t (look-back included) its next tile is already being
// copied into the other shared stage (cp.async.cg, 16 bytes per chunk: each thread later reads
// back only what it copied itself, so cp.async.wait_group is all the ordering it needs), and
// the ticket after that is already being fetched. The look-back reads {32 * wl} predecessors'
// status words per L2 round trip.
//
.version 8.0
.target sm_90
.address_size 64

.extern .shared .align 16 .b8 stage[];     // dynamic: two stages of {tile * 4} bytes

.visible .entry scan_inclusive(
    .param .u64 scan_inclusive_param_x,
    .param .u64 scan_inclusive_param_y,
    .param .u64 scan_inclusive_param_state,
    .param .u32 scan_inclusive_param_n
)
.maxntid {threads}, 1, 1
.minnctapersm {minb}
{{
    .reg .pred  %q, %full, %lane0, %thread0, %valid0, %valid1, %busy, %found, %found0, %mine;
    .reg .pred  %ifull, %iq, %has_next;
    .reg .b32   %thread, %lane, %warp, %tile, %next, %after, %ticket, %ntiles, %window, %look0;
    .reg .b32   %tmp, %flag0, %flag1, %bits0, %bits1, %ballot0, %ballot1, %upto0, %upto1;
    .reg .b32   %bits, %flag, %isize, %cur_s, %nxt_s, %swap;
    .reg .b64   %x, %y, %state, %status, %n, %tile_base, %toff_e, %idx, %left, %py, %word, %at;
    .reg .b64   %word0, %word1, %sa0, %ibase, %iidx, %iat, %isrc, %ileft;
    .reg .f32   %v<{4 * c}>;                     // v[4*j + k]: element k of this thread's chunk j
    .reg .f32   %s<{c}>;                      // chunk j: inclusive scan of the lane sums
    .reg .f32   %before<{c}>;                 // chunk j: sum of everything before this lane
    .reg .f32   %total<{c}>;                  // chunk j: the warp's sum of chunk j
    .reg .f32   %t<{c}>, %w<{nw}>, %add<{c}>;
    .reg .f32   %warp_sum, %warp_before, %tile_total, %exclusive, %val, %val1, %offset;
    .shared .align 4  .u32 tile_s;
    .shared .align 16 .f32 warp_total_s[{nw}];
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
    setp.eq.u32         %thread0, %thread, 0;
    add.s64             %at, %n, {tile - 1};
    shr.u64             %at, %at, {tile.bit_length() - 1};
    cvt.u32.u64         %ntiles, %at;       // cdiv(n, {tile})
    // this thread's first element inside a tile, and its bytes in either stage
    mul.lo.u32          %tmp, %warp, {per_warp};
    shl.b32             %bits, %lane, 2;
    add.u32             %tmp, %tmp, %bits;
    cvt.u64.u32         %toff_e, %tmp;
    shl.b32             %tmp, %tmp, 2;
    mov.u32             %cur_s, stage;
    add.u32             %cur_s, %cur_s, %tmp;
    add.u32             %nxt_s, %cur_s, {tile * 4};

    // The first tile, in launch order (not ctaid: look-back only cannot deadlock when every
    // tile before a ticket is held by a running block)
    @%thread0 atom.global.add.u32 %ticket, [%state], 1;
    @%thread0 st.shared.u32 [tile_s], %ticket;
    bar.sync            0;
    ld.shared.u32       %tile, [tile_s];
    setp.ge.u32         %q, %tile, %ntiles;
    @%q bra             DONE;               // no tile left for this block (or n = 0)""")
    L += issue(c, "%tile", "%cur_s", "FIRST")
    a("""    cp.async.commit_group;
    // and the ticket of the tile after it
    bar.sync            0;                  // everyone has read tile_s
    @%thread0 atom.global.add.u32 %ticket, [%state], 1;
    @%thread0 st.shared.u32 [tile_s], %ticket;
    bar.sync            0;
    ld.shared.u32       %next, [tile_s];

TILE_LOOP:
    // tile %tile is on its way into stage %cur_s; %next is the ticket after it
    setp.lt.u32         %has_next, %next, %ntiles;
    @!%has_next bra     NEXT_ISSUED;""")
    L += issue(c, "%next", "%nxt_s", "NEXT")
    a("""NEXT_ISSUED:
    cp.async.commit_group;                  // (empty when there is no next tile)
    // the ticket after next: its latency hides behind this tile's scan and look-back
    @%thread0 atom.global.add.u32 %ticket, [%state], 1;
    cp.async.wait_group 1;                  // this thread's copies of tile %tile have landed""")
    for j in range(c):
        vs = ", ".join(f"%v{4 * j + k}" for k in range(4))
        a(f"    ld.shared.v4.f32    {{{vs}}}, [%cur_s+{512 * j}];")
    a(f"""    mul.wide.u32        %tile_base, %tile, {tile};
    add.s64             %idx, %tile_base, %toff_e;
    shl.b64             %at, %idx, 2;
    add.s64             %py, %y, %at;
    sub.s64             %left, %n, %idx;    // elements from idx to the end (may be <= 0)
    add.s64             %at, %tile_base, {tile};
    setp.le.s64         %full, %at, %n;
    // scan inside each chunk's four elements""")
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
    a("""
    @!%lane0 bra        WARP_SUM_STORED;
    mov.u32             %look0, warp_total_s;
    shl.b32             %bits, %warp, 2;
    add.u32             %look0, %look0, %bits;
    st.shared.f32       [%look0], %warp_sum;
WARP_SUM_STORED:
    bar.sync            0;""")
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
    // ---- decoupled look-back: warp 0 finds the sum of every tile before this one ----
    setp.ne.u32         %q, %warp, 0;
    @%q bra             PREFIX_KNOWN;
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
    add.s64             %sa0, %status, %sa0;""")
    if wl == 2:
        a(
            "    setp.ge.s32         %valid1, %look0, 32;    // and tile window - 32 - l, 256 bytes lower"
        )
    a("""LOOK_SPIN:
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
    add.f32             %val, %exclusive, %tile_total;
    mov.b32             %bits, %val;
    mov.b32             %flag, 2;
    mov.b64             %word, {{%bits, %flag}};
    @%lane0 st.relaxed.gpu.global.b64 [%at], %word;
    @%lane0 st.shared.f32 [tile_prefix_s], %exclusive;
PREFIX_KNOWN:
    // every thread read tile_s before the barrier above: thread 0 may write the next ticket
    @%thread0 st.shared.u32 [tile_s], %ticket;
    bar.sync            0;
    ld.shared.u32       %after, [tile_s];
    ld.shared.f32       %offset, [tile_prefix_s];
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
    a("    bra.uni             STORED;\n")
    a("STORE_TAIL:")
    for j in range(c):
        for k in range(4):
            a(f"    setp.gt.s64         %q, %left, {128 * j + k};")
            a(f"    @%q st.global.f32   [%py+{512 * j + 4 * k}], %v{4 * j + k};")
    a("""STORED:
    @!%has_next bra     DONE;
    mov.u32             %tile, %next;
    mov.u32             %next, %after;
    mov.u32             %swap, %cur_s;
    mov.u32             %cur_s, %nxt_s;
    mov.u32             %nxt_s, %swap;
    bra.uni             TILE_LOOP;

DONE:
    ret;
}
""")
    return "\n".join(L).replace("%TILE%", str(tile))


def cuda(nw: int, c: int, wl: int, minb: int) -> str:
    threads, tile = nw * 32, nw * c * 128
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
// Launch: block {threads}, grid min(cdiv(n, {tile}), {132 * minb}), {2 * tile * 4} bytes of dynamic shared memory;
// `state` holds cdiv(n, {tile}) + 1 words and must be zero before the launch (a cudaMemsetAsync
// of the workspace).
//
// A block scans tile after tile ({tile} elements each), taken in order from an atomic ticket
// (state[0]): while it scans one, the next one is already being copied into the other shared
// stage (cp.async through __pipeline_memcpy_async, zero-filled past n) and the ticket after it
// is being fetched. A warp owns {c * 128} consecutive elements of a tile, {c} chunks of 128, lane l
// elements 4l..4l+3 of each. The tile's total is published at once as an "aggregate"; warp 0
// then walks back over its predecessors' published values, {32 * wl} per round trip, until it meets
// an "inclusive prefix", and publishes its own. A block's other tickets are larger than its
// current tile, so the smallest unfinished tile is always being scanned: no deadlock.
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

// this thread's CHUNKS 16-byte pieces of the tile starting at element `start` into its stage
// `dst` (one commit group); `first` = start + this thread's first element in a tile
__device__ __forceinline__ void issue(float4* dst, const float* x, long long start, int toff, int n) {{
    const long long first = start + toff;
    if (start + TILE <= n) {{
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) __pipeline_memcpy_async(dst + j * 32, x + first + j * 128, 16);
    }} else {{  // the last tile: 4k bytes of a chunk with k < 4 elements left, zero-filled
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {{
            long long left = n - (first + j * 128);
            int bytes = left >= 4 ? 16 : left > 0 ? (int)left * 4 : 0;
            __pipeline_memcpy_async(dst + j * 32, bytes ? x + first + j * 128 : x, 16, 16 - bytes);
        }}
    }}
    __pipeline_commit();
}}

__global__ void __launch_bounds__(THREADS, {minb}) scan_inclusive(const float* x, float* y,
                                                          unsigned long long* state, int n) {{
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

    while (true) {{
        const bool has_next = next < ntiles;
        if (has_next) issue(other, x, (long long)next * TILE, toff, n);
        else __pipeline_commit();
        unsigned after = 0;  // the ticket after next, fetched while this tile is scanned
        if (threadIdx.x == 0) after = atomicAdd((unsigned*)state, 1u);
        __pipeline_wait_prior(1);
        float v[CHUNKS][4];
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {{
            float4 q = mine[j * 32];
            v[j][0] = q.x; v[j][1] = q.y; v[j][2] = q.z; v[j][3] = q.w;
        }}
        const long long base = (long long)tile * TILE + toff;
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
        __syncthreads();
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
                int window = (int)tile - 1;
                while (true) {{
                    int t = window - lane;
                    unsigned long long word;
                    do {{
                        word = t >= 0 ? peek(&status[t]) : pack(FLAG_PREFIX, 0.0f);
                    }} while (__any_sync(0xffffffffu, (word >> 32) == 0));
                    unsigned prefix_lanes = __ballot_sync(0xffffffffu, (word >> 32) == FLAG_PREFIX);
                    int stop = prefix_lanes ? __ffs(prefix_lanes) - 1 : 31;
                    float val = lane <= stop ? __uint_as_float((unsigned)word) : 0.0f;{far.replace(chr(10) + "                ", chr(10) + "                    ")}
#pragma unroll
                    for (int d = 16; d > 0; d >>= 1) val += __shfl_xor_sync(0xffffffffu, val, d);
                    exclusive += val;
                    if (prefix_lanes) break;
                    window -= {32 * wl};
                }}
                if (lane == 0) publish(&status[tile], pack(FLAG_PREFIX, exclusive + tile_total));
            }}
            if (lane == 0) tile_prefix_s = exclusive;
        }}
        if (threadIdx.x == 0) tile_s = after;  // everyone read tile_s before the last barrier
        __syncthreads();
        after = tile_s;
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
        if (!has_next) return;
        tile = next;
        next = after;
        float4* swap = mine;
        mine = other;
        other = swap;
    }}
}}
"""


def spec(nw: int, c: int, minb: int, stem: str) -> dict:
    tile = nw * c * 128
    s = json.loads((ROOT / "fewshot/kernels/scan_inclusive/spec.json").read_text())
    for p in s["params"]:
        if p["name"] == "state":
            p["length"] = f"cdiv(n, {tile}) + 1"
    s["launch"] = {
        "grid": f"min(cdiv(n, {tile}), {132 * minb})",
        "block": str(nw * 32),
        "shared": str(2 * tile * 4),
    }
    # the sizes around the new tile edge too, and one where blocks take several tiles each
    s["sizes"] = sorted(set(s["sizes"]) | {tile - 1, tile, tile + 1, 2 * tile + 3})
    s["reference"] = f"{stem}.cu"
    s["origin"] = [f"bench/tuning/{stem}.spec.json"]
    return s


# (warps per block, chunks of 4 floats per thread, status words per lane per round trip,
#  blocks per SM: .minnctapersm and the grid's cap, 132 SMs on the H200)
CANDIDATES = {
    "scan_inclusive_vp8w4c": (8, 4, 2, 5),  # tile 4096, 32 KB of stages, 5 blocks per SM
    "scan_inclusive_vp8w8c": (8, 8, 2, 3),  # tile 8192, 64 KB of stages, 3 blocks per SM
}

if __name__ == "__main__":
    for stem, (nw, c, wl, minb) in CANDIDATES.items():
        (HERE / f"{stem}.ptx").write_text(ptx(nw, c, wl, minb))
        (HERE / f"{stem}.cu").write_text(cuda(nw, c, wl, minb))
        (HERE / f"{stem}.spec.json").write_text(
            json.dumps(spec(nw, c, minb, stem), indent=2) + "\n"
        )
        print(stem)
