"""Benchmark of the compute-heavy library kernels (scan, SGEMM, tensor-core GEMMs) on the GPU:
our hand-written PTX against the nvcc -O3 build of the folder's reference.cu and against
PyTorch (cumsum, cuBLAS fp32 with TF32 off, cuBLAS fp16), in one process, one run.

Standalone on purpose: it needs numpy, torch and cuda-bindings, and neither pygls nor openai
(the GPU machine has neither). Usage, on the GPU machine, from the repository root:

    python3 bench/gemm_bench.py                      # every kernel below, JSON + table to stdout
    python3 bench/gemm_bench.py sgemm_128x128 --json out.json
    python3 bench/gemm_bench.py sgemm_128x128 --profile-once   # one launch at the bench size (ncu)

Rules, so that no kernel can cheat the clock (each applies to ours, nvcc's and torch's alike):
every timed launch starts from re-poisoned outputs (NaN), zeroed scratch, unchanged inputs and a
flushed L2 (a 256 MiB write); CUDA events surround the launch alone; after every timed launch
the output is compared with the float64 reference (outside the events); inputs are checked
unchanged at the end. The three contenders are interleaved launch by launch, so clock drift
hits all alike. Median of RUNS launches, with min, max and the interquartile range.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "fewshot" / "kernels"
RUNS = 30
FLUSH_BYTES = 256 << 20
GUARD = 4096  # elements of poison before and after every output: out-of-bounds writes show


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass
class Problem:
    """One shape of one kernel: device tensors, launch, reference, baseline."""

    args: list  # tensors (pointers) and python ints (i32 scalars), in .entry order
    outputs: list  # (name, tensor) pairs checked against `expected`
    scratch: list  # tensors zeroed before each launch
    inputs: list  # tensors that must stay unchanged
    grid: tuple
    block: tuple
    shared: int
    expected: dict  # name -> float64 tensor
    tol: float
    torch_fn: object = None  # writes the baseline's result into its own output
    torch_out: object = None
    flops: float = 0.0
    bytes: float = 0.0
    label: str = ""
    notes: list = field(default_factory=list)


def rel_err(got, expected) -> float:
    """max |got - expected| / max(|expected|, 1e-3 max|expected|), NaN counts as infinite."""
    import torch

    g = got.double().reshape(-1)
    e = expected.reshape(-1)
    if g.numel() == 0:
        return 0.0
    if torch.isnan(g).any():
        return math.inf
    floor = 1e-3 * e.abs().max().clamp_min(1e-30)
    return float(((g - e).abs() / torch.maximum(e.abs(), floor)).max())


# -- the kernels ------------------------------------------------------------------------------


def guarded(torch, n: int, dtype, poison=float("nan")):
    """An output of n elements between two poisoned guard bands; returns (data view, whole)."""
    whole = torch.full((n + 2 * GUARD,), poison, dtype=dtype, device="cuda")
    return whole[GUARD : GUARD + n], whole


def scan_launch() -> tuple[int, int]:
    """(elements per tile, threads per block) of the library's scan, read from its spec.json:
    a hard-coded block outlived the kernel once (256 threads launched on a `.maxntid 128`
    kernel: CUDA_ERROR_INVALID_VALUE), so the launch comes from where the kernel's author
    states it."""
    launch = json.loads((KERNELS / "scan_inclusive" / "spec.json").read_text())["launch"]
    tile = int(re.fullmatch(r"cdiv\(n, (\d+)\)", launch["grid"]).group(1))
    return tile, int(launch["block"])


def scan_problem(torch, n: int, seed: int) -> Problem:
    tile, block = scan_launch()
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.rand(n, device="cuda", generator=g) * 2 - 1
    y, y_whole = guarded(torch, n, torch.float32)
    state = torch.zeros(cdiv(n, tile) + 1, dtype=torch.int64, device="cuda")
    y_torch = torch.empty_like(y)
    return Problem(
        args=[x, y, state, n], outputs=[("y", y, y_whole)], scratch=[state], inputs=[x],
        grid=(max(1, cdiv(n, tile)), 1, 1), block=(block, 1, 1), shared=0,
        expected={"y": torch.cumsum(x.double(), 0)}, tol=5e-3,
        torch_fn=lambda: torch.cumsum(x, 0, out=y_torch), torch_out=y_torch,
        bytes=8.0 * n, label=f"n={n}",
    )  # fmt: skip


def gemm_problem(torch, dtype, tile_m: int, tile_n: int, shared: int, block: int, tol: float):
    def make(m: int, n: int, k: int, seed: int) -> Problem:
        g = torch.Generator(device="cuda").manual_seed(seed)
        a = (torch.rand(m * k, device="cuda", generator=g) * 2 - 1).to(dtype)
        b = (torch.rand(k * n, device="cuda", generator=g) * 2 - 1).to(dtype)
        c, c_whole = guarded(torch, m * n, dtype)
        c_torch = torch.empty(m, n, dtype=dtype, device="cuda")
        expected = a.double().view(m, k) @ b.double().view(k, n)
        a2, b2 = a.view(m, k), b.view(k, n)
        return Problem(
            args=[a, b, c, m, n, k], outputs=[("C", c, c_whole)], scratch=[], inputs=[a, b],
            grid=(cdiv(n, tile_n), cdiv(m, tile_m), 1), block=(block, 1, 1), shared=shared,
            # the spec.json tolerance: fp32 accumulation error grows with K; at K = 8192 an
            # fp16 C is 4.4e-3 off float64 (cuBLAS's too, H200 2026-12-03)
            expected={"C": expected.reshape(-1)}, tol=tol,
            torch_fn=lambda: torch.matmul(a2, b2, out=c_torch), torch_out=c_torch,
            flops=2.0 * m * n * k, bytes=float(a.element_size() * (m * k + k * n + m * n)),
            label=f"M={m} N={n} K={k}",
        )  # fmt: skip

    return make


def kernel_table(torch):
    """name -> (target arch, test problems, bench problems). Shapes: odd ones for the tests,
    the bench sizes last."""
    sgemm = gemm_problem(torch, torch.float32, 128, 128, 0, 256, 5e-3)
    table = {
        "scan_inclusive": (
            "sm_90",
            lambda: [scan_problem(torch, n, 10 + i) for i, n in
                     enumerate([1, 3, 4095, 4097, 131073, 1000003])],
            lambda: [scan_problem(torch, n, 20 + i) for i, n in enumerate([1 << 24, 1 << 26])],
        ),
        "sgemm_128x128": (
            "sm_90",
            lambda: [sgemm(m, n, k, 30 + i) for i, (m, n, k) in
                     enumerate([(1, 4, 6), (7, 10, 12), (129, 132, 134), (255, 250, 1001),
                                (1001, 1004, 77)])],
            lambda: [sgemm(4096, 4096, 4096, 40)],
        ),
    }  # fmt: skip
    hgemm = KERNELS / "hgemm_mma" / "kernel.ptx"
    if hgemm.is_file():
        mma = gemm_problem(torch, torch.float16, 128, 128, 0, 128, 1e-2)
        table["hgemm_mma"] = (
            "sm_90",
            lambda: [mma(m, n, k, 50 + i) for i, (m, n, k) in
                     enumerate([(1, 16, 24), (17, 24, 40), (129, 144, 152), (255, 264, 1000),
                                (1000, 1000, 1000)])],
            lambda: [mma(4096, 4096, 4096, 60), mma(8192, 8192, 8192, 61)],
        )  # fmt: skip
    wg = KERNELS / "hgemm_wgmma" / "kernel.ptx"
    if wg.is_file():
        spec = json.loads((KERNELS / "hgemm_wgmma" / "spec.json").read_text())
        shared = int(spec["launch"]["shared"])
        w = gemm_problem(torch, torch.float16, 256, 128, shared, 256, 1e-2)
        table["hgemm_wgmma"] = (
            "sm_90a",
            lambda: [w(m, n, k, 70 + i) for i, (m, n, k) in
                     enumerate([(1, 8, 8), (17, 24, 40), (129, 136, 200), (255, 264, 1000),
                                (300, 520, 4104), (1000, 1000, 1000)])],
            lambda: [w(4096, 4096, 4096, 80), w(8192, 8192, 8192, 81)],
        )  # fmt: skip
    return table


# -- building and launching -------------------------------------------------------------------


def build(name: str, arch: str, workdir: Path) -> tuple[bytes, bytes, str]:
    """(our cubin, nvcc's cubin, tool versions). ptxas for the hand-written PTX; nvcc -O3 for
    the reference, for the same target."""
    folder = KERNELS / name
    ours = workdir / f"{name}.ptx.cubin"
    ref = workdir / f"{name}.ref.cubin"
    subprocess.run(
        ["ptxas", f"-arch={arch}", "-O3", str(folder / "kernel.ptx"), "-o", str(ours)], check=True
    )
    virt = arch.replace("sm_", "compute_")
    subprocess.run(
        ["nvcc", "-O3", "-cubin", f"-gencode=arch={virt},code={arch}",
         str(folder / "reference.cu"), "-o", str(ref)], check=True,
    )  # fmt: skip
    version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    return ours.read_bytes(), ref.read_bytes(), version.strip().splitlines()[-1]


def entry_symbol(cubin: bytes, name: str) -> str:
    """The kernel's symbol in a cubin: the plain name (PTX, extern "C"), else the C++ mangled
    one nvcc gives a reference.cu kernel (_Z<len><name>...)."""
    if re.search(rb"\x00" + name.encode() + rb"\x00", cubin):
        return name
    m = re.search(rb"_Z%d%s[A-Za-z0-9_]*" % (len(name), name.encode()), cubin)
    return m.group(0).decode() if m else name


class Driver:
    """cuModuleLoadData / cuLaunchKernel on the context torch made current."""

    def __init__(self):
        from cuda.bindings import driver as cu

        self.cu = cu
        self.modules = []

    def check(self, out):
        err = out[0] if isinstance(out, tuple) else out
        if err != self.cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"CUDA driver error {err}")
        return out[1] if isinstance(out, tuple) and len(out) == 2 else None

    def function(self, cubin: bytes, name: str, shared: int):
        mod = self.check(self.cu.cuModuleLoadData(cubin))
        self.modules.append(mod)
        fn = self.check(self.cu.cuModuleGetFunction(mod, entry_symbol(cubin, name).encode()))
        if shared > 48 * 1024:
            attr = self.cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            self.check(self.cu.cuFuncSetAttribute(fn, attr, shared))
        return fn

    def launch(self, fn, p: Problem, stream: int) -> None:
        # one 1-element array per parameter; the driver reads each through the pointer array
        values = [
            np.array([a], np.int32) if isinstance(a, int) else np.array([a.data_ptr()], np.uint64)
            for a in p.args
        ]
        ptrs = np.array([v.ctypes.data for v in values], dtype=np.uint64)
        self.check(
            self.cu.cuLaunchKernel(fn, *p.grid, *p.block, p.shared, stream, ptrs.ctypes.data, 0)
        )


# -- measuring --------------------------------------------------------------------------------


def prepare(torch, p: Problem, flush) -> None:
    """The untimed state every launch starts from."""
    for _, _view, whole in p.outputs:
        whole.fill_(float("nan"))
    if p.torch_out is not None:
        p.torch_out.fill_(float("nan"))
    for s in p.scratch:
        s.zero_()
    flush.zero_()


def check_guards(p: Problem) -> str:
    import torch

    for name, _, whole in p.outputs:
        band = torch.cat([whole[:GUARD], whole[-GUARD:]])
        if not torch.isnan(band.float()).all():
            return f"{name}: out-of-bounds write into the guard band"
    return ""


def run_kernel(torch, drv: Driver, name: str, arch: str, tests, benches, runs: int) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="gemm-bench-"))
    ours_bin, ref_bin, nvcc_version = build(name, arch, workdir)
    result = {"kernel": name, "arch": arch, "nvcc": nvcc_version, "tests": [], "bench": []}
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    fns = {}
    # correctness at every test shape, ours and nvcc's, against float64
    for p in tests():
        row = {"shape": p.label}
        for who, cubin in (("ours", ours_bin), ("nvcc", ref_bin)):
            if (who, p.shared) not in fns:
                fns[(who, p.shared)] = drv.function(cubin, name, p.shared)
            fn = fns[(who, p.shared)]
            prepare(torch, p, flush)
            before = [t.clone() for t in p.inputs]
            drv.launch(fn, p, stream)
            torch.cuda.synchronize()
            errs = {n: rel_err(out, p.expected[n]) for n, out, _ in p.outputs}
            bad = check_guards(p) or next(
                (f"input {i} changed" for i, (a, b) in enumerate(zip(before, p.inputs, strict=True))
                 if not torch.equal(a, b)), "")  # fmt: skip
            ok = all(e <= p.tol for e in errs.values()) and not bad
            row[who] = {"ok": ok, "max_rel_err": max(errs.values()), "problem": bad}
        result["tests"].append(row)
        print(f"  test {name} {p.label}: ours {row['ours']} nvcc {row['nvcc']}", flush=True)
    # timing at the bench shapes
    for p in benches():
        for who, cubin in (("ours", ours_bin), ("nvcc", ref_bin)):
            if (who, p.shared) not in fns:
                fns[(who, p.shared)] = drv.function(cubin, name, p.shared)
        fo, fr = fns[("ours", p.shared)], fns[("nvcc", p.shared)]
        contenders = {
            "ours": lambda fo=fo, p=p: drv.launch(fo, p, stream),
            "nvcc": lambda fr=fr, p=p: drv.launch(fr, p, stream),
            "torch": p.torch_fn,
        }
        outs = {"ours": p.outputs[0][1], "nvcc": p.outputs[0][1], "torch": p.torch_out}
        times = {k: [] for k in contenders}
        worst = {k: 0.0 for k in contenders}
        before = [t.clone() for t in p.inputs]
        expected = p.expected[p.outputs[0][0]]
        for go in contenders.values():  # warm-up: module load, cuBLAS handle, heuristics
            prepare(torch, p, flush)
            go()
        torch.cuda.synchronize()
        for _ in range(runs):
            for who, go in contenders.items():
                prepare(torch, p, flush)
                start, end = (
                    torch.cuda.Event(enable_timing=True),
                    torch.cuda.Event(enable_timing=True),
                )
                start.record()
                go()
                end.record()
                end.synchronize()
                times[who].append(start.elapsed_time(end))
                worst[who] = max(worst[who], rel_err(outs[who], expected))  # every timed output
        unchanged = all(torch.equal(a, b) for a, b in zip(before, p.inputs, strict=True))
        row = {"shape": p.label, "inputs_unchanged": unchanged, "runs": runs}
        for who in contenders:
            t = sorted(times[who])
            med = statistics.median(t)
            q1, q3 = t[len(t) // 4], t[(3 * len(t)) // 4]
            row[who] = {
                "median_ms": med, "min_ms": t[0], "max_ms": t[-1], "iqr_ms": [q1, q3],
                "timed_outputs_max_rel_err": worst[who], "timed_outputs_ok": worst[who] <= p.tol,
            }  # fmt: skip
            if p.flops:
                row[who]["tflops"] = p.flops / (med * 1e-3) / 1e12
            if p.bytes:
                row[who]["gbps"] = p.bytes / (med * 1e-3) / 1e9
        row["ratio_vs_nvcc"] = row["nvcc"]["median_ms"] / row["ours"]["median_ms"]
        row["ratio_vs_torch"] = row["torch"]["median_ms"] / row["ours"]["median_ms"]
        result["bench"].append(row)
        print(
            f"  bench {name} {p.label}: ours {row['ours']['median_ms']:.4f} ms, nvcc "
            f"{row['nvcc']['median_ms']:.4f} ms, torch {row['torch']['median_ms']:.4f} ms; "
            f"x{row['ratio_vs_nvcc']:.3f} vs nvcc, x{row['ratio_vs_torch']:.3f} vs torch",
            flush=True,
        )
    return result


def copy_ceiling(torch) -> float:
    src = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    t = []
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        dst.copy_(src)
        e.record()
        e.synchronize()
        t.append(s.elapsed_time(e))
    return 2 * src.numel() * 4 / (statistics.median(t) * 1e-3) / 1e9


def machine() -> dict:
    q = "name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit"
    smi = subprocess.run(
        ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True, text=True
    )
    return {"nvidia_smi": {"query": q, "value": smi.stdout.strip()}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", nargs="*")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--runs", type=int, default=RUNS)
    ap.add_argument("--profile-once", action="store_true",
                    help="launch ours once at the largest bench shape (for ncu) and exit")  # fmt: skip
    a = ap.parse_args(argv)
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # cuBLAS fp32 really in fp32
    torch.backends.cudnn.allow_tf32 = False
    torch.cuda.init()
    torch.empty(1, device="cuda")  # make the primary context current for the driver calls
    drv = Driver()
    table = kernel_table(torch)
    names = a.kernels or list(table)
    if a.profile_once:
        for name in names:
            arch, _, benches = table[name]
            workdir = Path(tempfile.mkdtemp(prefix="gemm-prof-"))
            ours_bin, _, _ = build(name, arch, workdir)
            p = benches()[-1]
            fn = drv.function(ours_bin, name, p.shared)
            drv.launch(fn, p, torch.cuda.current_stream().cuda_stream)
            torch.cuda.synchronize()
            print(
                f"{name} {p.label}: rel err {rel_err(p.outputs[0][1], p.expected[p.outputs[0][0]]):.2e}"
            )
        return 0
    report = {
        "machine": machine(),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "copy_ceiling_gbps": copy_ceiling(torch),
        "tf32": torch.backends.cuda.matmul.allow_tf32,
        "results": [],
    }
    print(f"{report['device']}: copy ceiling {report['copy_ceiling_gbps']:.0f} GB/s", flush=True)
    for name in names:
        arch, tests, benches = table[name]
        try:
            report["results"].append(run_kernel(torch, drv, name, arch, tests, benches, a.runs))
        except Exception as e:  # one kernel's failure must not lose the others
            report["results"].append({"kernel": name, "error": f"{type(e).__name__}: {e}"})
            print(f"  {name}: {type(e).__name__}: {e}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
