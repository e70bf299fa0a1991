"""Writes the hgemm_mma tuning candidate bench/tuning/hgemm_mma_vdb.ptx (+ .cu, .spec.json) from
the library kernel: the same tiles, swizzle, cp.async issue and epilogue, a new main loop.

The PTX is written by hand (no compiler involved): this script splices a hand-written main loop
into fewshot/kernels/hgemm_mma/kernel.ptx and repeats the 32 mma lines of a k16 step.

What changes (the CUTLASS multistage main loop): the A/B fragments are double-buffered, so a
k16 step's ldmatrix is issued before the previous step's 32 mma.sync, not after them; the one
bar.sync per k tile sits between the two k16 steps, with the first step's mma already issued
(the tensor pipe works through them while the warp waits), and the pipeline keeps 3 k tiles in
flight: tile kt+3 is copied into the stage tile kt leaves. In the library kernel all four warps
met at the barrier with their tensor work drained, then each issued 8 ldmatrix and waited for
them before its first mma (Nsight Compute: 0.87 long-scoreboard + 0.20 short-scoreboard + 0.18
barrier cycles of 6.23 per instruction, beside 2.91 of fixed-latency "wait" between HMMAs).

    python3 bench/tuning/gen_hgemm.py
"""

from __future__ import annotations

import json
from pathlib import Path

from generated import cli

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LIB = ROOT / "fewshot/kernels/hgemm_mma"


def ldm(f: int, step: int, stage_reg: str) -> list[str]:
    """ldmatrix of k16 step `step` of the stage at offset `stage_reg` into fragment set f."""
    a, b = 16 * f, 16 * f
    L = [
        f"    add.s32             %ra{f}, %a_ld{step}, {stage_reg};",
    ]
    L += [f"    add.s32             %rbp{4 * f + j}, %b_ld{j}, {stage_reg};" for j in range(4)]
    for mi in range(4):
        regs = ", ".join(f"%a{a + 4 * mi + k}" for k in range(4))
        L.append(f"    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{regs}}}, [%ra{f}+{1024 * mi}];")
    for nj in range(4):
        regs = ", ".join(f"%b{b + 4 * nj + k}" for k in range(4))
        off = f"+{4096 * step}" if step else ""
        L.append(
            f"    ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{regs}}}, [%rbp{4 * f + nj}{off}];"
        )
    return L


def mmas(f: int) -> list[str]:
    a, b = 16 * f, 16 * f
    L = []
    for mi in range(4):
        for n8 in range(8):
            acc = ", ".join(f"%acc{(mi * 8 + n8) * 4 + k}" for k in range(4))
            ar = ", ".join(f"%a{a + 4 * mi + k}" for k in range(4))
            br = f"%b{b + 2 * n8}, %b{b + 2 * n8 + 1}"
            L.append(
                "    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                f"{{{acc}}}, {{{ar}}}, {{{br}}}, {{{acc}}};"
            )
    return L


def main_loop() -> str:
    L = [
        "    // k tiles of 32; the pipeline is filled with tiles 0, 1 and 2 (stages 0, 1, 2)",
        "    add.s32             %ktiles, %K, 31;",
        "    shr.s32             %ktiles, %ktiles, 5;",
        "    mov.u32             %k_next, 0;",
        "    mov.u32             %ws, 0;",
        "    mov.u32             %phase, 0;",
        "",
        "    // ---- issue the cp.async copies of k tile %k_next into stage %ws, one commit group ----",
        "    // (a subroutine by branches: %phase 0..2 are the prologue, 3 and up the main loop;",
        "    // tiles past K copy nothing and zero-fill, so every step commits one group)",
    ]
    return "\n".join(L)


def splice() -> str:
    src = (LIB / "kernel.ptx").read_text()
    head, rest = src.split(
        "    // k tiles of 32; the pipeline is filled with tiles 0 and 1 (stages 0 and 1)\n", 1
    )
    issue_start = rest.index("ISSUE_TILE:\n")
    issue_end = rest.index("    add.s32             %phase, %phase, 1;\n")
    issue = rest[issue_start:issue_end]
    tail = rest[rest.index("    cp.async.wait_group 0;\n") :]
    head = head.replace(
        "    .reg .b32   %a_row, %a_kc, %b_row, %b_nc, %a_st, %b_st, %As, %Bs, %ra0, %ra1;",
        "    .reg .b32   %a_row, %a_kc, %b_row, %b_nc, %a_st, %b_st, %As, %Bs, %ra0, %ra1;\n"
        "    .reg .b32   %rbp<8>;",
    )
    head = head.replace(
        "    .reg .b32   %a<16>, %b<16>;",
        "    .reg .b32   %a<32>, %b<32>;       // two fragment sets: a/b 0..15 and 16..31",
    )
    head = head.replace("    .reg .b32   %rb<4>, %a_ld0,", "    .reg .b32   %a_ld0,")
    L = [main_loop(), issue.rstrip("\n")]
    L += [
        "    add.s32             %phase, %phase, 1;",
        "    setp.eq.u32         %q, %phase, 1;",
        "    @%q mov.u32         %ws, 8192;",
        "    @%q bra.uni         ISSUE_TILE;             // prologue: tile 1 into stage 1",
        "    setp.eq.u32         %q, %phase, 2;",
        "    @%q mov.u32         %ws, 16384;",
        "    @%q bra.uni         ISSUE_TILE;             // prologue: tile 2 into stage 2",
        "    setp.eq.u32         %q, %phase, 3;",
        "    @%q bra.uni         PROLOGUE_DONE;",
        "    bra.uni             TILE_ISSUED;",
        "",
        "PROLOGUE_DONE:",
        "    cp.async.wait_group 2;                      // my copies of tile 0 have landed",
        "    bar.sync            0;                      // everyone's have",
        "    mov.u32             %kt, 0;",
        "    mov.u32             %rs, 0;                 // stage of tile kt",
        "    // fragment set 0 <- tile 0, k16 step 0",
    ]
    L += ldm(0, 0, "%rs")
    L += [
        "K_LOOP:",
        "    // fragment set 1 <- tile kt, k16 step 1: in flight while step 0's mma issue",
    ]
    L += ldm(1, 1, "%rs")
    L.append("    // k16 step 0 of tile kt")
    L += mmas(0)
    L += [
        "    cp.async.wait_group 1;                      // my copies of tile kt+1 have landed",
        "    bar.sync            0;                      // everyone's have; tile kt's stage is read",
        "    mov.u32             %ws, %rs;               // tile kt+3 goes where tile kt was",
        "    bra.uni             ISSUE_TILE;",
        "TILE_ISSUED:",
        "    add.s32             %rs, %rs, 8192;         // stage of tile kt+1, modulo 3",
        "    setp.eq.u32         %q, %rs, 24576;",
        "    selp.b32            %rs, 0, %rs, %q;",
        "    // fragment set 0 <- tile kt+1, k16 step 0: in flight while step 1's mma issue",
    ]
    L += ldm(0, 0, "%rs")
    L.append("    // k16 step 1 of tile kt")
    L += mmas(1)
    L += [
        "    add.s32             %kt, %kt, 1;",
        "    setp.lt.s32         %more, %kt, %ktiles;",
        "    @%more bra.uni      K_LOOP;",
    ]
    text = head + "\n".join(L) + "\n" + tail
    text = text.replace(
        "// per step through a 3-stage cp.async pipeline: at step kt the tile kt+2 is requested while\n"
        "// tile kt is multiplied (2 k16 steps x (4 ldmatrix A + 4 ldmatrix.trans B + 32 mma)).",
        "// per step through a 3-stage cp.async pipeline. The A/B fragments are double-buffered: each\n"
        "// k16 step's 8 ldmatrix are issued before the previous step's 32 mma, and the one bar.sync\n"
        "// per k tile sits between a tile's two k16 steps, after step 0's mma are issued; then tile\n"
        "// kt+3 is requested into the stage tile kt leaves (3 tiles in flight).",
    )
    return text


def cuda() -> str:
    src = (LIB / "reference.cu").read_text()
    start = src.index("    float acc[4][8][4] = {};")
    end = src.index('    asm volatile("cp.async.wait_group 0;\\n" ::);')
    loop = """    float acc[4][8][4] = {};
    const int ktiles = (K + BK - 1) / BK;
    // fragments of one k16 step of a stage: 4 A tiles (m16) and 4 B pairs (2 x n8)
    auto load_frags = [&](uint32_t (&a)[4][4], uint32_t (&b)[4][4], int stage, int ks) {
        const uint32_t a_base = As + stage * A_STAGE_BYTES, b_base = Bs + stage * B_STAGE_BYTES;
#pragma unroll
        for (int mi = 0; mi < 4; ++mi) ldmatrix_x4(a[mi], a_base + (ks ? a_ld1 : a_ld0) + mi * 1024);
#pragma unroll
        for (int nj = 0; nj < 4; ++nj) ldmatrix_x4_trans(b[nj], b_base + b_ld[nj] + ks * 4096);
    };
    auto mma_step = [&](const uint32_t (&a)[4][4], const uint32_t (&b)[4][4]) {
#pragma unroll
        for (int mi = 0; mi < 4; ++mi)
#pragma unroll
            for (int nj = 0; nj < 4; ++nj) {
                mma16816(acc[mi][2 * nj], a[mi], b[nj][0], b[nj][1]);
                mma16816(acc[mi][2 * nj + 1], a[mi], b[nj][2], b[nj][3]);
            }
    };
    // double-buffered fragments: a k16 step's ldmatrix go out before the previous step's mma;
    // the barrier sits between a tile's two steps, and tile kt+3 goes where tile kt was
    uint32_t a0[4][4], b0[4][4], a1[4][4], b1[4][4];
    load_stage(0, 0);
    load_stage(1, BK);
    load_stage(2, 2 * BK);
    asm volatile("cp.async.wait_group 2;\\n" ::);
    __syncthreads();
    load_frags(a0, b0, 0, 0);
    for (int kt = 0; kt < ktiles; ++kt) {
        const int stage = kt % STAGES;
        load_frags(a1, b1, stage, 1);
        mma_step(a0, b0);
        asm volatile("cp.async.wait_group 1;\\n" ::);
        __syncthreads();  // tile kt+1 visible to all; everyone is done with tile kt's stage
        load_stage(stage, (kt + 3) * BK);
        load_frags(a0, b0, (kt + 1) % STAGES, 0);
        mma_step(a1, b1);
    }
"""
    text = src[:start] + loop + src[end:]
    text = text.replace(
        "// (w%2)*64) as 4x8 m16n8k16 tiles = 128 fp32 accumulators per thread. K is walked 32 at a\n"
        "// time through a 3-stage cp.async pipeline (two tiles in flight while one is computed).",
        "// (w%2)*64) as 4x8 m16n8k16 tiles = 128 fp32 accumulators per thread. K is walked 32 at a\n"
        "// time through a 3-stage cp.async pipeline; the fragments are double-buffered, the one\n"
        "// barrier per k tile sits between its two k16 steps (as in kernel.ptx).",
    )
    return text


def made() -> dict[str, str]:
    stem = "hgemm_mma_vdb"
    s = json.loads((LIB / "spec.json").read_text())
    s["reference"] = f"{stem}.cu"
    s["origin"] = [f"bench/tuning/{stem}.spec.json"]
    return {
        f"{stem}.ptx": splice(),
        f"{stem}.cu": cuda(),
        f"{stem}.spec.json": json.dumps(s, indent=2) + "\n",
    }


if __name__ == "__main__":
    raise SystemExit(cli(made, "the hgemm_mma tuning candidate"))
