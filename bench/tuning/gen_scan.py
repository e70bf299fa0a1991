"""Writes the scan_inclusive tuning candidates (PTX, CUDA reference, spec) into bench/tuning/:
one generator, four families of candidates, one row per candidate in ``VARIANTS``.

    python3 bench/tuning/gen_scan.py             # (re)write every candidate's three files
    python3 bench/tuning/gen_scan.py --check     # exit 1 where a committed file differs
    python3 bench/tuning/gen_scan.py --out DIR   # write them into DIR instead

The PTX is written here by hand, as text (no compiler involved): the generator only repeats the
per-chunk lines for C chunks per thread and W warps per block. Each candidate's CUDA reference
is the same algorithm written idiomatically (the fair nvcc baseline); its spec is the library
kernel's (fewshot/kernels/scan_inclusive/spec.json) with the candidate's launch and the sizes
around its tile edges. What each family measured: bench/results/library/h200-2026-12-03-notes.md.

``tiles`` (scan_inclusive_v*): what the candidates change against the library's kernel (block
256, 4 chunks of 4 floats per thread = tiles of 4096, a look-back window of 32 tiles per L2
round trip): bigger tiles (8192 or 16384 elements, so half or a quarter as many tiles go
through the look-back) and a window of 64 tiles (each lane reads two status words per round
trip). Why the tile count matters: a tile's look-back walks back window by window (one L2 round
trip each, ~0.4 us) until it meets a tile that has published its inclusive prefix. At R tiles
started per us, a look-back that takes L us has R*L newer tiles behind the nearest prefix, so
L ~ (R*L/W)*r: the walk cannot keep up once R > W/r. At 2^26 floats the library kernel runs at
16384 tiles / 203 us = 81 tiles/us, which is 32 / 0.4 us.

``early`` (scan_inclusive_ve*): the ``tiles`` kernel with one change: the look-back runs in a
warp of its own (block = data warps + 1), which starts walking back over the predecessors'
status words as soon as the block has its ticket, while the data warps' loads are in flight. It
publishes the tile's aggregate as soon as the data warps hand over the total (a flag in shared
memory that it polls in its spin loop) and the inclusive prefix once both are known, so the
data warps wait at the barrier for max(look-back, their own work) instead of their own work +
the look-back. Nsight Compute on the one-tile-per-block candidates (call 1): 56 % of the cycles
between a warp's instructions at the barrier behind warp 0's look-back, DRAM at 50-60 %.

``pipe`` (scan_inclusive_vp*): a block no longer scans one tile and exits. It stays, and while
it scans tile t (its look-back included) the copies of its next tile are already in flight
into a second shared-memory stage (cp.async, 16 bytes per thread and chunk, zero-filled past
n), and the ticket for the tile after that is already being fetched. The Nsight Compute profile
of the one-tile-per-block candidates (call 1) had 56 % of the cycles between a warp's
instructions at the barrier behind warp 0's look-back, with DRAM at 50-60 %: nothing of the
block was in flight while it waited. Here each block keeps a tile of loads in flight through
the look-back. Deadlock: a block holds its current tile t and the tickets of the next two (both
> t). The smallest tile not yet finished is always some block's current tile (a block's other
tickets are larger than its current one), and every tile before it is finished, so its
look-back ends.

``smem`` (scan_inclusive_vs*; the family adopted, as block 128 with 12 blocks per SM):
against the library kernel as it was (each thread holds its 16 floats in registers from the
load to the store, 40 registers, 6 blocks of 256 per SM = 96 KB per SM in flight), the tile
goes from global to shared memory with cp.async (16 bytes per thread and chunk, zero-filled
past n), so a block's tile costs no registers while it waits for its look-back, and more blocks
fit on an SM: 12 blocks of 128 threads with tiles of 4096 (16 KB each) or 6 blocks of 256 with
tiles of 8192 (32 KB each), 192 KB per SM either way, twice the bytes in flight of the library
kernel. The tile is then read twice from shared memory (reduce-then-scan inside the block):

1. each thread sums its chunks (kept: one float per chunk), the warp reduces its sum with
   butterfly shuffles, the warp sums meet in shared memory; the tile's aggregate is published
   by warp 0 as soon as the barrier is passed, before any scan work;
2. warp 0 does the decoupled look-back (window 32, as in the library kernel) while the other
   warps scan their chunk sums across lanes (shfl.up) into each chunk's "before";
3. after the second barrier every thread reads its chunks again, scans the four floats of
   each with the offset folded in, and stores them (coalesced 16-byte stores).

Each thread reads back only the shared bytes it copied itself, so cp.async.wait_group is all
the ordering the copies need (no barrier).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from generated import cli

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ZERO = "0f00000000"
H200_SMS = 132


@dataclass(frozen=True)
class Variant:
    """One candidate: its family and shape."""

    family: str  # "tiles", "early", "pipe", "smem"
    nw: int  # warps per block holding data (early: + 1 look-back warp)
    c: int  # chunks of 4 floats per thread
    minb: int  # blocks per SM asked of ptxas with .minnctapersm (pipe: also the grid's cap)
    wl: int = 1  # status words per lane per look-back round trip (window 32 * wl)
    dyn: bool = False  # smem: the tile in dynamic shared memory

    @property
    def tile(self) -> int:
        return self.nw * self.c * 128

    def launch(self) -> dict[str, str]:
        tile, block = self.tile, self.nw * 32 + (32 if self.family == "early" else 0)
        grid = f"cdiv(n, {tile})"
        shared = "0"
        if self.family == "pipe":
            grid, shared = f"min(cdiv(n, {tile}), {H200_SMS * self.minb})", str(2 * tile * 4)
        elif self.family == "smem" and self.dyn:
            shared = str(tile * 4)
        return {"grid": grid, "block": str(block), "shared": shared}

    def edge_sizes(self) -> set[int]:
        """The sizes around the tile's edge (smem: and around the last chunks' 16-byte pieces)."""
        t = self.tile
        return {t - 1, t, t + 1, 2 * t + 3} | ({3 * t + 130} if self.family == "smem" else set())


VARIANTS: dict[str, Variant] = {
    # tiles: tile 8192 / window 32 / 40 registers; window 64; 32 floats per thread, 64
    # registers; tile 16384, window 64, 64 registers
    "scan_inclusive_v16w4c1l": Variant("tiles", 16, 4, 3, wl=1),
    "scan_inclusive_v16w4c2l": Variant("tiles", 16, 4, 3, wl=2),
    "scan_inclusive_v8w8c2l": Variant("tiles", 8, 8, 4, wl=2),
    "scan_inclusive_v16w8c2l": Variant("tiles", 16, 8, 2, wl=2),
    # early: the library's tiles (4096) and window (32), + 1 warp; tile 8192, window 64, + 1 warp
    "scan_inclusive_ve8w4c": Variant("early", 8, 4, 5, wl=1),
    "scan_inclusive_ve8w8c": Variant("early", 8, 8, 3, wl=2),
    # pipe: tile 4096, 32 KB of stages, 5 blocks per SM; tile 8192, 64 KB of stages, 3 per SM
    "scan_inclusive_vp8w4c": Variant("pipe", 8, 4, 5, wl=2),
    "scan_inclusive_vp8w8c": Variant("pipe", 8, 8, 3, wl=2),
    # smem: tile 4096, 16 KB shared, 12 blocks of 128 per SM; tile 8192, 32 KB, 6 of 256;
    # tile 16384, 64 KB dynamic, 3 of 512
    "scan_inclusive_vs4c8": Variant("smem", 4, 8, 12),
    "scan_inclusive_vs8c8": Variant("smem", 8, 8, 6),
    "scan_inclusive_vs16c8": Variant("smem", 16, 8, 3, dyn=True),
}


def spec(v: Variant, stem: str) -> dict:
    s = json.loads((ROOT / "fewshot/kernels/scan_inclusive/spec.json").read_text())
    for p in s["params"]:
        if p["name"] == "state":
            p["length"] = f"cdiv(n, {v.tile}) + 1"
    s["launch"] = v.launch()
    s["sizes"] = sorted(set(s["sizes"]) | v.edge_sizes())
    s["reference"] = f"{stem}.cu"
    s["origin"] = [f"bench/tuning/{stem}.spec.json"]
    return s


def files(stem: str, v: Variant) -> dict[str, str]:
    """The candidate's three files: name -> text."""
    ptx, cuda = FAMILIES[v.family]
    return {
        f"{stem}.ptx": ptx(v),
        f"{stem}.cu": cuda(v),
        f"{stem}.spec.json": json.dumps(spec(v, stem), indent=2) + "\n",
    }


def made() -> dict[str, str]:
    """Every candidate's files."""
    return {name: text for stem, v in VARIANTS.items() for name, text in files(stem, v).items()}


# ---- the PTX blocks the families share ------------------------------------------------------

# The aggregate published by the early family's look-back warp from inside its spin loop.
_EARLY_AGGREGATE = """
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
AGG_OUT:"""


def _look_back(wl: int, *, at_spin: str = "", found0: bool = True) -> list[str]:
    """One window of the decoupled look-back, every family's: each lane spins on its status
    word(s) until the window's tiles have all published, and the warp sums the lanes up to the
    nearest inclusive prefix into %val. ``wl`` 2: a second word 32 tiles further back per
    lane. ``at_spin``: lines run on each spin (the early family publishes its aggregate
    there); ``found0``: %found0 set (every family but smem tests it)."""
    L: list[str] = []
    a = L.append
    a(
        """LOOK_SPIN:"""
        + at_spin
        + """
    // lanes before tile 0 read as "inclusive prefix 0"; tile 0 itself always is one
    mov.b64             %word0, 0x0000000200000000;
    @%valid0 ld.relaxed.gpu.global.b64 %word0, [%sa0];"""
    )
    if wl == 2:
        a("""    mov.b64             %word1, 0x0000000200000000;
    @%valid1 ld.relaxed.gpu.global.b64 %word1, [%sa0+-256];""")
    a("""    mov.b64             {%bits0, %flag0}, %word0;
    setp.eq.u32         %q, %flag0, 0;
    vote.sync.any.pred  %busy, %q, 0xffffffff;
    @%busy bra          LOOK_SPIN;          // some tile of the window has published nothing yet
    setp.eq.u32         %q, %flag0, 2;
    vote.sync.ballot.b32 %ballot0, %q, 0xffffffff;""")
    if found0:
        a("    setp.ne.u32         %found0, %ballot0, 0;")
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
    return L


def _load_global(c: int) -> list[str]:
    """This thread's C chunks of 4 floats from global memory into %v: 16-byte loads for a
    full tile, element by element (zero past n) for the last."""
    L: list[str] = []
    a = L.append
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
    return L


def _warp_scan(c: int) -> list[str]:
    """The inclusive scan of each chunk's lane sums across the warp (%s), each lane's
    %before per chunk, and the warp's sum (%warp_sum)."""
    L: list[str] = []
    a = L.append
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
    return L


def _tile_total(nw: int) -> list[str]:
    """The warp sums meet in shared memory: every thread gets the tile's total and the sum
    of the warps before its own (%warp_before)."""
    L: list[str] = []
    a = L.append
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
    return L


def _add_and_store(c: int) -> list[str]:
    """The offset added to every element, and the tile stored (16-byte stores for a full
    tile, element by element for the last)."""
    L: list[str] = []
    a = L.append
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
    return L


# ---- the CUDA blocks the families' references share -------------------------------------------

# A tile's status word: flag and value packed in 64 bits, published and read relaxed.
_CUDA_STATUS_WORDS = """__device__ __forceinline__ unsigned long long pack(unsigned long long flag, float v) {
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
"""


def _cuda_far_window(wl: int) -> str:
    """wl 2: each lane also reads the status word 32 tiles further back (a window of 64)."""
    if wl != 2:
        return ""
    return """
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


def _cuda_load_and_warp_scan(c: int) -> str:
    """The tiles and early references: a thread's C chunks loaded (zero past n) and scanned,
    the chunk sums scanned across the warp: before[j] and the warp's total (warp_running)."""
    return f"""    // load: thread holds v[j][0..3] = x[base + j*128 + lane*4 .. +3], zero past n
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
"""


# ---- the families' PTX and CUDA --------------------------------------------------------------


def _tiles_ptx(v: Variant) -> str:
    nw, c, wl, minb = v.nw, v.c, v.wl, v.minb
    threads, tile, per_warp = nw * 32, nw * c * 128, c * 128
    L: list[str] = []
    a = L.append
    a(f"""//
// scan_inclusive: y[i] = x[0] + ... + x[i], float32, single pass with decoupled look-back.
// Hand-written for the ptxls few-shot library (not compiler output).
// Launch: block ({threads},1,1), grid (cdiv(n,{tile}),1,1). state: cdiv(n,{tile})+1 u64 words, all
// zero before the launch: state[0] low half = tile ticket counter, state[1+t] = status of
// tile t (high half: 0 not ready, 1 aggregate, 2 inclusive prefix; low half: the float's bits).
//
// Tile = {tile} elements; warp w owns elements w*{per_warp} .. w*{per_warp}+{per_warp - 1} of it, as {c} chunks of
// 128: lane l holds x[chunk + 4l .. 4l+3] from one 16-byte load per chunk (coalesced).
// The look-back reads {32 * wl} predecessors' status words per L2 round trip (lane l: tiles
// window - l{" and window - 32 - l" if wl == 2 else ""}).
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
.maxntid {threads}, 1, 1
.minnctapersm {minb}
{{
    .reg .pred  %q, %full, %lane0, %valid0, %valid1, %busy, %found, %found0, %mine;
    .reg .b32   %thread, %lane, %warp, %tile, %ticket, %window, %look0, %tmp;
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
HAVE_TICKET:
    bar.sync            0;
    ld.shared.u32       %tile, [tile_s];
    mul.wide.u32        %tile_base, %tile, {tile};
    setp.ge.s64         %q, %tile_base, %n;
    @%q bra             DONE;               // n = 0 (one block still runs): nothing to do

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
    L += _load_global(c)
    a("    // scan inside each chunk's four elements")
    for j in range(c):
        for k in (1, 2, 3):
            a(f"    add.f32             %v{4 * j + k}, %v{4 * j + k}, %v{4 * j + k - 1};")
    L += _warp_scan(c)
    L += _tile_total(nw)
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
            """    setp.ge.s32         %valid1, %look0, 32;    // and tile window - 32 - l, 256 bytes lower"""
        )
    L += _look_back(wl)
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
    bar.sync            0;
    ld.shared.f32       %offset, [tile_prefix_s];
    add.f32             %offset, %offset, %warp_before;""")
    L += _add_and_store(c)
    a("\nDONE:\n    ret;\n}\n")
    return "\n".join(L)


def _tiles_cuda(v: Variant) -> str:
    nw, c, wl, minb = v.nw, v.c, v.wl, v.minb
    threads, tile = nw * 32, nw * c * 128
    far = _cuda_far_window(wl)
    return f"""// Inclusive prefix sum y[i] = x[0] + ... + x[i] of float32, in ONE pass over memory: a
// single-pass scan with decoupled look-back (Merrill & Garland 2016, the algorithm of CUB's
// DeviceScan), the same algorithm as kernel.ptx written as idiomatic CUDA.
// Launch: block {threads}, grid cdiv(n, {tile}); `state` holds cdiv(n, {tile}) + 1 words and must be
// zero before the launch (a cudaMemsetAsync of the workspace).
//
// Each block scans one {tile}-element tile: a warp owns {c * 128} consecutive elements, read as
// {c} coalesced 16-byte loads per thread (chunk j of a warp = elements j*128 .. j*128+127). The
// block's total is published at once as an "aggregate"; the block then walks back over its
// predecessors' published values, {32 * wl} per round trip, until it meets an "inclusive prefix",
// and publishes its own inclusive prefix. Tiles are handed out in launch order by an atomic
// counter (state[0]), so every predecessor of a tile is already running: no deadlock.
#include <cuda/atomic>

#define THREADS {threads}
#define CHUNKS {c}
#define TILE (THREADS * CHUNKS * 4)
#define FLAG_AGGREGATE 1ull
#define FLAG_PREFIX 2ull

{_CUDA_STATUS_WORDS}
__global__ void __launch_bounds__(THREADS, {minb}) scan_inclusive(const float* x, float* y,
                                                          unsigned long long* state, int n) {{
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

{_cuda_load_and_warp_scan(c)}    if (lane == 0) warp_total_s[warp] = warp_running;
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
            int window = tile - 1;  // lane l looks at tile window - l{" (and window - 32 - l)" if wl == 2 else ""}
            while (true) {{
                int t = window - lane;
                unsigned long long word;
                do {{
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
            if (lane == 0) publish(&status[tile], pack(FLAG_PREFIX, exclusive + tile_total));
        }}
        if (lane == 0) tile_prefix_s = exclusive;
    }}
    __syncthreads();
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


def _early_ptx(v: Variant) -> str:
    nw, c, wl, minb = v.nw, v.c, v.wl, v.minb
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
    L += _load_global(c)
    a("    // scan inside each chunk's four elements")
    for j in range(c):
        for k in (1, 2, 3):
            a(f"    add.f32             %v{4 * j + k}, %v{4 * j + k}, %v{4 * j + k - 1};")
    L += _warp_scan(c)
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
    L += _add_and_store(c)
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
    L += _look_back(wl, at_spin=_EARLY_AGGREGATE)
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


def _early_cuda(v: Variant) -> str:
    nw, c, wl, minb = v.nw, v.c, v.wl, v.minb
    threads, tile = nw * 32, nw * c * 128
    all_threads = threads + 32
    far = _cuda_far_window(wl)
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

{_CUDA_STATUS_WORDS}
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

{_cuda_load_and_warp_scan(c)}    if (lane == 0) warp_total_s[warp] = warp_running;
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


def _pipe_issue(c: int, tile_reg: str, dst: str, tag: str) -> list[str]:
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


def _pipe_ptx(v: Variant) -> str:
    nw, c, wl, minb = v.nw, v.c, v.wl, v.minb
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
    L += _pipe_issue(c, "%tile", "%cur_s", "FIRST")
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
    L += _pipe_issue(c, "%next", "%nxt_s", "NEXT")
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
    L += _warp_scan(c)
    L += _tile_total(nw)
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
    L += _look_back(wl)
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


def _pipe_cuda(v: Variant) -> str:
    nw, c, wl, minb = v.nw, v.c, v.wl, v.minb
    threads, tile = nw * 32, nw * c * 128
    far = _cuda_far_window(wl)
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

{_CUDA_STATUS_WORDS}
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


def _smem_ptx(v: Variant) -> str:
    nw, c, minb, dyn = v.nw, v.c, v.minb, v.dyn
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
    add.s64             %sa0, %status, %sa0;""")
    L += _look_back(1, found0=False)
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


def _smem_cuda(v: Variant) -> str:
    nw, c, minb, dyn = v.nw, v.c, v.minb, v.dyn
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

{_CUDA_STATUS_WORDS}
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


FAMILIES: dict[str, tuple[Callable[[Variant], str], Callable[[Variant], str]]] = {
    "tiles": (_tiles_ptx, _tiles_cuda),
    "early": (_early_ptx, _early_cuda),
    "pipe": (_pipe_ptx, _pipe_cuda),
    "smem": (_smem_ptx, _smem_cuda),
}

if __name__ == "__main__":
    raise SystemExit(cli(made, "the scan_inclusive tuning candidates"))
