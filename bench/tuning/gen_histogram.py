"""Writes the histogram256 tuning candidates (PTX, CUDA reference, spec) into bench/tuning/.

The PTX is written here by hand, as text (no compiler involved): this script only repeats the
per-byte block 32 times per trip. Candidates: 32 lane-private bin copies (bin v of lane l at
word 32 v + l: the 32 lanes of one red.shared always hit 32 different banks, whatever the
bytes), with 256 or 512 threads per block.

    python3 bench/tuning/gen_histogram.py
"""

from __future__ import annotations

import json
from pathlib import Path

from generated import cli

HERE = Path(__file__).resolve().parent


def count_bytes(words: list[str]) -> str:
    out = []
    for w in words:
        for pos in (0, 8, 16, 24):
            out += [
                f"    bfe.u32             %b, {w}, {pos}, 8;",
                "    shl.b32             %b, %b, 7;",
                "    add.s32             %b, %b, %hist;",
                "    red.shared.add.u32  [%b], 1;",
            ]
    return "\n".join(out)


def ptx(threads: int, max_grid: int) -> str:
    per_thread = 8192 // threads  # words of bins each thread zeroes
    zero = "\n".join(
        f"    st.shared.v4.u32    [%r6+{16 * i}], {{0, 0, 0, 0}};" for i in range(per_thread // 4)
    )
    lo = "%r2" if threads == 256 else "%r2"
    return f"""//
// histogram256: counts[v] = number of bytes of x[0:n] equal to v, for v = 0..255.
// Hand-written for the ptxls few-shot library (not compiler output).
// Launch: block ({threads},1,1), grid (min(ceil(n/{16 * threads * 2}), {max_grid}),1,1). work is 257
// words of scratch: the grid's running counts and a count of blocks done, zero before the
// launch (the last block puts them back to zero).
//
// Privatised in shared memory, one copy of the 256 bins per lane: bin v of lane l at word
// 32 v + l (32 KB per block). Lane l's word is always in bank l, so the 32 lanes of one
// red.shared.add (an atomic with no return value) hit 32 different banks whatever the bytes
// are: one shared-memory wavefront per warp instruction. (16 copies, lane l -> copy l % 16,
// left lanes l and l + 16 on one bank half the time: two wavefronts on nearly every
// instruction.) The warps of a block share the copies, so the adds stay atomic.
// x is read as 16-byte vectors, two in flight per thread (32 bytes), bytes picked out with
// bfe. At the end thread t < 256 sums the 32 copies of bin t, word 32 t + ((k + lane) % 32)
// at step k (32 banks per warp read), and adds the block's nonzero bins to the grid's counts
// in work[]; the block that finishes last copies them to counts and zeroes work. One launch,
// and counts need not be zero beforehand.
//
.version 8.0
.target sm_90
.address_size 64

.visible .entry histogram256(
    .param .u64 histogram256_param_x,
    .param .u64 histogram256_param_counts,
    .param .u64 histogram256_param_work,
    .param .u32 histogram256_param_n
)
.maxntid {threads}, 1, 1
{{
    .reg .pred  %p<9>;
    .reg .b32   %r<24>, %w<8>, %b, %hist;
    .reg .b64   %rd<12>;
    .reg .b32   %lane, %k, %word, %sum;
    .shared .align 16 .u32 bins[8192];           // bin v of lane l: bins[32v + l]
    .shared .align 4 .u32 is_last;

    ld.param.u64        %rd1, [histogram256_param_x];
    ld.param.u64        %rd2, [histogram256_param_counts];
    ld.param.u64        %rd3, [histogram256_param_work];
    ld.param.u32        %r1, [histogram256_param_n];
    cvta.to.global.u64  %rd1, %rd1;
    cvta.to.global.u64  %rd2, %rd2;
    cvta.to.global.u64  %rd3, %rd3;
    mov.u32             %r2, %tid.x;
    mov.u32             %r3, %ctaid.x;
    mov.u32             %r4, %nctaid.x;
    // zero this block's bins: thread t the {per_thread} words from {per_thread} t
    mov.u32             %r5, bins;
    shl.b32             %r6, {lo}, {(per_thread * 4).bit_length() - 1};
    add.s32             %r6, %r5, %r6;
{zero}
    and.b32             %lane, %r2, 31;
    shl.b32             %hist, %lane, 2;
    add.s32             %hist, %hist, %r5;       // this lane's copy: bin v at hist + 128 v
    bar.sync            0;

    mad.lo.s32          %r7, %r3, {threads}, %r2;      // j: this thread's first 16-byte chunk
    mul.lo.s32          %r8, %r4, {threads};           // stride in chunks: grid * {threads}
    shr.u32             %r9, %r1, 4;             // chunk count: n / 16
    mul.wide.u32        %rd4, %r8, 16;           // stride in bytes
LOOP2:
    add.s32             %r10, %r7, %r8;          // two chunks per trip: j and j + stride
    setp.ge.u32         %p1, %r10, %r9;
    @%p1 bra            LOOP1;
    mul.wide.u32        %rd5, %r7, 16;
    add.s64             %rd5, %rd1, %rd5;
    add.s64             %rd6, %rd5, %rd4;
    ld.global.nc.L1::no_allocate.v4.u32 {{%w0, %w1, %w2, %w3}}, [%rd5];
    ld.global.nc.L1::no_allocate.v4.u32 {{%w4, %w5, %w6, %w7}}, [%rd6];
{count_bytes([f"%w{i}" for i in range(8)])}
    shl.b32             %r11, %r8, 1;
    add.s32             %r7, %r7, %r11;
    bra.uni             LOOP2;
LOOP1:
    setp.ge.u32         %p2, %r7, %r9;
    @%p2 bra            TAIL;
    mul.wide.u32        %rd5, %r7, 16;
    add.s64             %rd5, %rd1, %rd5;
    ld.global.nc.v4.u32 {{%w0, %w1, %w2, %w3}}, [%rd5];
{count_bytes([f"%w{i}" for i in range(4)])}
TAIL:
    // the n % 16 bytes after the last chunk: thread t < n % 16 of block 0
    shl.b32             %r12, %r9, 4;
    add.s32             %r12, %r12, %r2;
    setp.ne.s32         %p3, %r3, 0;
    setp.ge.u32         %p4, %r12, %r1;
    or.pred             %p3, %p3, %p4;
    @%p3 bra            MERGE;
    cvt.u64.u32         %rd7, %r12;
    add.s64             %rd7, %rd1, %rd7;
    ld.global.nc.u8     %b, [%rd7];
    shl.b32             %b, %b, 7;
    add.s32             %b, %b, %hist;
    red.shared.add.u32  [%b], 1;

MERGE:
    bar.sync            0;
    setp.ge.u32         %p8, %r2, 256;           // threads 256.. have no bin of their own
    @%p8 bra            COUNTED;
    // thread t sums the 32 copies of bin t, word 32 t + (k + lane) % 32 at step k: the
    // warp's 32 reads hit 32 banks
    shl.b32             %r6, %r2, 7;
    add.s32             %r6, %r6, %r5;           // &bins[32 t]
    mov.u32             %sum, 0;
    mov.u32             %k, 0;
SUM_COPIES:
    add.s32             %word, %k, %lane;
    and.b32             %word, %word, 31;
    shl.b32             %word, %word, 2;
    add.s32             %word, %word, %r6;
    ld.shared.u32       %r13, [%word];
    add.s32             %sum, %sum, %r13;
    add.s32             %k, %k, 1;
    setp.lt.u32         %p5, %k, 32;
    @%p5 bra            SUM_COPIES;
    // this block's bin tid into the grid's running count (skipped when empty)
    setp.eq.u32         %p5, %sum, 0;
    mul.wide.u32        %rd8, %r2, 4;
    add.s64             %rd9, %rd3, %rd8;        // &work[tid]
    @!%p5 red.global.add.u32 [%rd9], %sum;
COUNTED:
    // every thread's adds are visible before thread 0 counts the block done
    fence.acq_rel.gpu;
    bar.sync            0;
    setp.ne.s32         %p6, %r2, 0;
    @%p6 bra            WAIT_LAST;
    atom.acq_rel.gpu.global.add.u32 %r14, [%rd3+1024], 1;   // work[256]: blocks done
    add.s32             %r15, %r4, -1;
    setp.eq.s32         %p7, %r14, %r15;
    selp.u32            %r16, 1, 0, %p7;
    st.shared.u32       [is_last], %r16;
WAIT_LAST:
    bar.sync            0;
    ld.shared.u32       %r16, [is_last];
    setp.eq.s32         %p7, %r16, 0;
    @%p7 bra            DONE;
    @%p8 bra            DONE;
    // the last block: every other block's adds are in work[]; copy them out, zero work[]
    fence.acq_rel.gpu;
    ld.relaxed.gpu.global.u32 %r17, [%rd9];
    add.s64             %rd10, %rd2, %rd8;
    st.global.u32       [%rd10], %r17;
    st.global.u32       [%rd9], 0;
    @%p6 bra            DONE;
    st.global.u32       [%rd3+1024], 0;
DONE:
    ret;
}}
"""


def cuda(threads: int, max_grid: int) -> str:
    per_block = 16 * threads * 2
    return f"""// 256-bin histogram of bytes, the same algorithm as kernel.ptx written as idiomatic CUDA:
// per-block bins in shared memory (atomicAdd), one copy per lane (bin v of lane l at 32 v + l,
// so one warp's atomics always hit 32 different banks), summed per bin at the end; grid-strided
// 16-byte loads (two per trip), each block's nonzero bins added to the running counts in
// work[0:256], a done count in work[256], and the last block copies the counts out and zeroes
// work. Launch: block {threads}, grid min(ceil(n/{per_block}), {max_grid}).
#define THREADS {threads}

__device__ __forceinline__ void count4(unsigned w, unsigned* bins) {{
    atomicAdd(&bins[32 * (w & 0xff)], 1u);
    atomicAdd(&bins[32 * ((w >> 8) & 0xff)], 1u);
    atomicAdd(&bins[32 * ((w >> 16) & 0xff)], 1u);
    atomicAdd(&bins[32 * (w >> 24)], 1u);
}}

__global__ void __launch_bounds__(THREADS) histogram256(const unsigned char* __restrict__ x,
                                                        unsigned* __restrict__ counts,
                                                        unsigned* work, int n) {{
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
    for (; j + stride < n16; j += 2 * stride) {{
        uint4 a = x16[j], b = x16[j + stride];
        count4(a.x, bins); count4(a.y, bins); count4(a.z, bins); count4(a.w, bins);
        count4(b.x, bins); count4(b.y, bins); count4(b.z, bins); count4(b.w, bins);
    }}
    if (j < n16) {{
        uint4 a = x16[j];
        count4(a.x, bins); count4(a.y, bins); count4(a.z, bins); count4(a.w, bins);
    }}
    if (blockIdx.x == 0 && 16 * n16 + threadIdx.x < (unsigned)n)
        atomicAdd(&bins[32 * x[16 * n16 + threadIdx.x]], 1u);
    __syncthreads();
    if (threadIdx.x < 256) {{
        unsigned mine = 0;  // the 32 copies of bin tid, read so that a warp hits 32 banks
        for (int k = 0; k < 32; ++k) mine += all_bins[threadIdx.x * 32 + ((k + lane) & 31)];
        if (mine) atomicAdd(&work[threadIdx.x], mine);
    }}
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) is_last = atomicAdd(&work[256], 1u) == gridDim.x - 1;
    __syncthreads();
    if (!is_last || threadIdx.x >= 256) return;
    __threadfence();
    counts[threadIdx.x] = *reinterpret_cast<volatile unsigned*>(&work[threadIdx.x]);
    work[threadIdx.x] = 0;
    if (threadIdx.x == 0) work[256] = 0;
}}
"""


def spec(threads: int, max_grid: int, stem: str) -> dict:
    s = json.loads((HERE.parent.parent / "fewshot/kernels/histogram256/spec.json").read_text())
    s["launch"] = {
        "grid": f"min(ceil(n/{16 * threads * 2}), {max_grid})",
        "block": str(threads),
        "shared": "0",
    }
    s["reference"] = f"{stem}.cu"
    s["origin"] = [f"bench/tuning/{stem}.spec.json"]
    return s


# 32 KB of bins per block: 6 blocks of 256 threads or 4 of 512 per SM on the H200 (132 SMs)
CANDIDATES = {"histogram256_v32x256": (256, 792), "histogram256_v32x512": (512, 528)}


def made() -> dict[str, str]:
    out = {}
    for stem, (threads, grid) in CANDIDATES.items():
        out[f"{stem}.ptx"] = ptx(threads, grid)
        out[f"{stem}.cu"] = cuda(threads, grid)
        out[f"{stem}.spec.json"] = json.dumps(spec(threads, grid, stem), indent=2) + "\n"
    return out


if __name__ == "__main__":
    raise SystemExit(cli(made, "the histogram256 tuning candidates"))
