"""A test on the CPU emulator: the same plan the GPU test runs (spec, sizes, seed, reference),
sent to the emulator's worker (``python -m ptxls.gputest.worker --device cpu``, killable like
the GPU's), and read back into the same TestReport.

What changes against the GPU, and why:

- PTX is still checked by the project's ptxas (a file ptxas refuses is a build error, as on the
  GPU), but the emulator runs the PTX text itself; a CUDA kernel, reference or nvcc baseline runs
  as ``nvcc -O3 -ptx``'s PTX (nvcc needs no GPU);
- nothing is timed: the report carries no time, bandwidth or ratio, and says "emulated (CPU), not
  GPU-verified" (report.headline/footer read ``device.kind``);
- sizes: the spec's sizes run as they are when the largest fits the stated budget (the
  engine's work: per thread by instruction class, plus a fixed cost per scheduler step);
  otherwise the largest is replaced by the largest size that fits, estimated
  from the smaller cases' measured thread-instructions, and a note says which;
- a launch that runs past its budget is a hang, reported as the GPU harness reports its timeout;
  an instruction the emulator does not implement is named (status ``error``), never run wrongly;
- what the emulator saw while running (out-of-bounds accesses, reads of shared memory never
  written, shared-memory races, divergent barriers, bad shfl masks, misaligned accesses) fails
  the case and is listed in ``report.findings`` on its PTX line; a warning (a read of a poisoned
  output before the kernel wrote it, a register never written: ``severity`` "warning") is listed
  there too, labelled emulator-only, and changes no verdict (a GPU could not fail on it).
"""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import build
from .report import BUILD_ERROR, ERROR, FAIL, TIMEOUT, CaseResult, TestReport
from .supervisor import Supervisor, WorkerReply, shared_supervisor

# What one case may cost before its size is reduced (the stated budget), in the engine's work
# units (emulator/simt.cost_of: per thread of each instruction by its class, about a CPU
# nanosecond each on the 2-core machine) plus STEP_COST per scheduler step (one instruction for
# one group of threads: 40 us whatever its width). So a kernel of cheap wide steps (vec_add:
# 2^24 threads, consecutive loads as one slice) and one of shared-memory, shuffle and mma steps
# are priced alike, and the same kernel gets the same sizes on any machine (no clock decides).
# About 2.5 s of a case on the 2-core machine: vec_add's 2^24 elements run as they are.
CASE_BUDGET = 2_500_000_000
STEP_COST = 40_000
# A launch that runs HANG_FACTOR times the case budget in thread-instructions, or HANG_SECONDS,
# without finishing is hung (a spin nobody ends; a few spinning threads run few per second).
HANG_FACTOR = 8
HANG_SECONDS = 30.0
STEP_TIMEOUT_S = 120.0  # the worker's wall clock per step (the emulator is slower than a GPU)
# sizes up to this run without an estimate (cheap for any kernel the library has)
SMALL_START = 64
FEW_THOUSAND = 4096


@dataclass
class EmulatedBuilds:
    kernel: dict  # the worker's "kernel" request part: name, ptx, globals
    reference: dict | None = None  # {"name", "ptx"} of nvcc's PTX of the reference .cu
    baseline: dict | None = None
    checked_by: str = ""  # "ptxas 13.0 -arch=sm_90" (the PTX was assembled once)
    notes: list[str] = field(default_factory=list)
    error: str = ""


def emulator_supervisor(opts) -> Supervisor:
    sup = getattr(opts, "emulator_supervisor", None)
    return sup or shared_supervisor("cpu")


async def run_on_emulator(plan, report: TestReport, why: str = "") -> None:
    """Fill ``report`` from the emulator. ``why``: why not the GPU ("no CUDA device (...)"),
    for the notes when the device was "auto"."""
    from .api import _read_reply, _reference

    opts = plan.opts
    if why:
        report.notes.append(f"{why}: ran on the CPU emulator instead")
    # The worker starts (its imports, the emulated device) while ptxas and nvcc run here: on
    # two cores that overlaps half a second of a cold `ptxls test --device cpu`.
    sup = emulator_supervisor(opts)
    warming = None if sup.warm else asyncio.ensure_future(_warm(sup))
    builds = await _builds(plan)
    if warming is not None:
        await warming
    report.notes += builds.notes
    if builds.error:
        report.status, report.summary = BUILD_ERROR, builds.error
        return
    ref_req = _reference(plan, [None, None], report) if plan.ref_kind in ("numpy", "self") else None
    if plan.ref_kind == "triton":  # Triton cannot launch without a GPU: its own PTX, emulated
        assert builds.reference is not None  # _builds made it (else builds.error)
        report.reference = builds.reference.pop("describe")
        ref_req = {"kind": "cuda", **builds.reference}
    elif plan.ref_kind == "cuda":
        path = plan.resolution.reference_path
        report.reference = (
            f"nvcc -O3 {Path(path).name if path else 'the reference CUDA'} (its PTX, emulated)"
        )
        assert builds.reference is not None  # _builds made it (else builds.error)
        ref_req = {"kind": "cuda", **builds.reference}
    msg = {"op": "run", "spec": plan.spec.to_dict(), "seed": plan.seed, "time": False,
           "kernel": builds.kernel, "reference": ref_req}  # fmt: skip
    if plan.with_baseline and builds.baseline:
        msg["baseline"] = builds.baseline
        where = Path(plan.resolution.reference_path or "reference.cu").name
        report.reference += f"; nvcc -O3 {where}'s PTX checked against it"
    reply = await run_sizes(sup, msg, plan.spec.sizes, opts, report)
    report.device = (reply.data.get("result") or {}).get("device") or sup.device or {}
    opts.timeout_s = max(opts.timeout_s, STEP_TIMEOUT_S)  # what the worker's steps had
    _read_reply(report, reply, plan, builds.checked_by)
    report.load_path = "PTX on the ptxls emulator (CPU)" + (
        f", checked by {builds.checked_by}" if builds.checked_by else ""
    )
    data = reply.data
    if data.get("hang"):
        report.status = TIMEOUT
        report.summary = f"timeout: {data['hang']}"
        bad = report.failing_case
        if bad is not None and not bad.messages:
            bad.messages.append(report.summary)
    elif data.get("refused") or (data.get("result") or {}).get("load", {}).get("refused"):
        report.status = ERROR
        report.summary = report.refused = data.get("refused") or data["result"]["load"]["refused"]
    report.findings = findings_of(report.cases)
    errors = [f for f in report.findings if f.get("severity", "error") == "error"]
    if report.status == FAIL and not report.summary and errors:
        report.summary = errors[0]["text"]


async def _warm(sup: Supervisor) -> None:
    """Start the worker (a hello); what it says is read again by the first request."""
    await sup.request({"op": "hello"}, timeout_s=STEP_TIMEOUT_S)


def findings_of(cases: list[CaseResult]) -> list[dict]:
    """The emulator's findings of every case, one per kind and place (the first case's)."""
    seen, out = set(), []
    for c in cases:
        for f in c.findings:
            key = (f.get("kind"), f.get("line"), f.get("other_line"))  # one per place
            if key not in seen:
                seen.add(key)
                out.append({**f, "n": c.n})
    return out


async def _builds(plan) -> EmulatedBuilds:
    """The kernel's PTX (checked by ptxas when the caller has not) and nvcc's PTX of a CUDA
    reference or baseline."""
    src, opts = plan.source, plan.opts
    arch = opts.arch or _target(src.target())
    out = EmulatedBuilds(kernel={"name": plan.kernel})
    if src.kind == "ptx":
        out.kernel["ptx"] = src.text
        if src.assembled is not None:
            out.checked_by = f"{src.assembled.tool.split(' (')[0]} -arch={src.assembled.arch}"
            if src.assembled.globals is not None:
                out.kernel["globals"] = src.assembled.globals
        else:
            b = await build.assemble_ptx(src.text, arch, ptxas=opts.ptxas)
            if b.cubin_path is None:
                if "not found" in b.error or "could not run" in b.error:
                    out.notes.append(
                        f"{b.error.splitlines()[0]} — the PTX was not checked by ptxas"
                    )
                else:
                    out.error = b.error
                    return out
            else:
                out.checked_by = f"{b.tool.split(' (')[0]} -arch={arch}"
                b.discard()
    else:
        ptx, entry, err = await cuda_to_ptx(src.text, plan.kernel, arch, opts.nvcc)
        if err:
            out.error = err
            return out
        out.kernel.update(name=entry, ptx=ptx)
        out.checked_by = f"nvcc -O3 -ptx -arch={arch}"
    if plan.ref_kind == "triton":
        out.reference, out.error = await triton_reference_ptx(plan, arch)
        return out
    if plan.ref_kind == "cuda" or plan.with_baseline:
        ptx, entry, err = await cuda_to_ptx(
            plan.resolution.reference_source, plan.kernel, arch, opts.nvcc
        )
        if err:
            out.error = f"the reference did not build: {err}"
            return out
        part = {"name": entry, "ptx": ptx}
        if plan.ref_kind == "cuda":
            out.reference = part
        else:
            out.baseline = part
    return out


async def triton_reference_ptx(plan, arch: str) -> tuple[dict | None, str]:
    """The Triton kernel compiled to PTX by Triton itself, as the reference the emulator runs:
    ({"name", "ptx", "extra_params", "describe"}, "") or (None, why not). Triton appends scratch
    pointer parameters to every entry; a kernel that uses no scratch gets them as null."""
    from ptxls.frontend.ptx import find_entries
    from ptxls.toolchain.triton_compile import triton_to_ptx

    build_json = plan.opts.triton_reference
    compiled = await triton_to_ptx(build_json, arch=arch)
    if not compiled.ok:
        return None, f"the Triton reference did not compile: {compiled.message}"
    meta = compiled.metadata or {}
    if meta.get("global_scratch_size") or meta.get("profile_scratch_size"):
        return (
            None,
            "the Triton reference needs scratch memory, which the emulator's harness does not give",
        )
    entries = find_entries(compiled.ptx)
    if len(entries) != 1:
        return None, f"Triton's PTX has {len(entries)} entries, expected one"
    entry = entries[0].name
    m = re.search(rf"\.entry\s+{re.escape(entry)}\s*\(([^)]*)\)", compiled.ptx)
    total = len([p for p in (m.group(1) if m else "").split(",") if p.strip()])
    extra = total - len(plan.spec.params)
    if extra < 0:
        return (
            None,
            f"Triton's entry takes {total} parameters, the spec has {len(plan.spec.params)}",
        )
    describe = (f"the Triton kernel {build_json.get('kernel', plan.kernel)}, its own PTX "
                f"(Triton {compiled.version}), emulated")  # fmt: skip
    return {"name": entry, "ptx": compiled.ptx, "extra_params": extra, "describe": describe}, ""


def _target(file_target: str | None) -> str:
    return file_target or "sm_90"


async def cuda_to_ptx(text: str, kernel: str, arch: str, nvcc: str | None):
    """(ptx, entry name, error): ``nvcc -O3 -ptx`` of a CUDA source and the entry of
    ``kernel`` in it (its C++ mangling)."""
    from ptxls.toolchain.discovery import ToolNotFound, find_nvcc
    from ptxls.toolchain.nvcc import nvcc_to_ptx

    from .sanitize_cuda import entry_for

    try:
        tool = await asyncio.to_thread(find_nvcc, nvcc)
    except ToolNotFound as e:
        return "", "", str(e)
    try:
        run = await nvcc_to_ptx(text, tool, arch=arch, extra_args=("-O3",), timeout=120.0)
    except OSError as e:
        return "", "", f"could not run {tool.path}: {e}"
    ptx = run.ptx
    if ptx is None:
        said = (run.result.stderr or run.result.stdout).replace(run.temp_dir + "/", "").strip()
        if "headers are incompatible" in said:  # the wheel's headers are newer than this nvcc
            ptx = await _nvcc_own_headers(text, tool.path, arch)
        if ptx is None:
            return "", "", f"nvcc failed:\n{said}"
    entry = entry_for(ptx, kernel)
    if entry is None:
        return "", "", f"no kernel named '{kernel}' in what nvcc compiled"
    return ptx, entry, ""


async def _nvcc_own_headers(text: str, nvcc: str, arch: str) -> str | None:
    """nvcc -ptx with only its own toolkit headers (an nvcc older than the CUDA wheels' headers
    refuses them: "CUDA compiler and CUDA toolkit headers are incompatible")."""
    import os
    import tempfile

    from ptxls.toolchain.process import run_killable

    with tempfile.TemporaryDirectory(prefix="ptxls-nvcc-") as tmp:
        src, out = Path(tmp) / "input.cu", Path(tmp) / "out.ptx"
        src.write_text(text)
        env = {**os.environ, "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp}
        res = await run_killable([nvcc, "-ptx", "-O3", f"-arch={arch}", str(src), "-o", str(out)],
                                 timeout=120.0, cwd=tmp, env=env)  # fmt: skip
        return out.read_text(errors="replace") if res.returncode == 0 and out.exists() else None


# -- sizes within the budget ---------------------------------------------------------------


def _default_budget() -> int:
    """CASE_BUDGET, or PTXLS_EMULATOR_BUDGET where set (a positive integer): the test suite
    gives every process it starts a smaller one (tests/conftest.py), as a slow CI runner may."""
    import os

    value = os.environ.get("PTXLS_EMULATOR_BUDGET", "")
    return int(value) if value.isdigit() and int(value) > 0 else CASE_BUDGET


async def run_sizes(sup: Supervisor, msg: dict, sizes: list[int], opts, report) -> WorkerReply:
    """The spec's sizes, smallest first, one request each: a size runs as it is when the cost
    measured on the smaller ones says it fits the budget, else the largest size that does runs
    in its place (said in the report's notes). Case indices and seeds stay the spec's."""
    budget = int(getattr(opts, "emulator_budget", None) or _default_budget())
    timeout = max(opts.timeout_s, STEP_TIMEOUT_S)
    msg = {**msg, "budget": HANG_FACTOR * budget, "hang_seconds": HANG_SECONDS}
    run_sizes = list(sizes)
    measured: list[tuple[int, int, int]] = []  # (n, thread work, steps) per case
    out = None
    for i in sorted(range(len(sizes)), key=lambda i: (sizes[i], i)):
        n = sizes[i]
        if measured and n > SMALL_START:
            n = fitting_size(sizes[i], measured, budget)
            if n != sizes[i]:
                over = (f"emulated sizes: n={sizes[i]} would cost an estimated "
                        f"{estimate(measured)(sizes[i]):,.0f} work units (the engine's work per "
                        f"thread and step; the budget is {budget:,} per case)")  # fmt: skip
                largest = max(m for m, _, _ in measured)
                if n <= largest:  # nothing between the sizes already run and the budget
                    report.notes.append(f"{over}: not run (n={largest} ran)")
                    continue
                report.notes.append(f"{over}: ran n={n} instead")
                run_sizes[i] = n
        reply = await _part(sup, msg, run_sizes, [i], timeout, opts)
        out = reply if out is None else _merge(out, reply)
        if not _clean(reply) and not _failed_cases_only(reply):
            break  # a hang, a refusal or a dead worker is the answer
        measured += [(c["n"], int(c.get("thread_work", c.get("thread_instructions")) or 0),
                      int(c.get("steps") or 0)) for c in _cases(reply)]  # fmt: skip
    report.sizes = run_sizes
    assert out is not None  # the smallest size always runs (validate() refuses no sizes)
    return out


def _failed_cases_only(reply: WorkerReply) -> bool:
    """A reply whose cases ran (some wrong): the next size still runs, as on the GPU."""
    return bool(reply.data.get("result", {}).get("cases")) and not (
        reply.timed_out or reply.crashed or reply.data.get("hang") or reply.data.get("refused")
        or reply.data.get("error")
    )  # fmt: skip


async def _part(sup, msg, sizes, indices, timeout, opts) -> WorkerReply:
    """Run the cases ``indices`` of ``sizes``, with the seeds and indices the whole run gives
    them: one request for a contiguous run of indices, else one per case."""
    runs = (
        [indices] if indices == list(range(indices[0], indices[-1] + 1)) else [[i] for i in indices]
    )
    out = None
    for run in runs:
        one = {**msg, "spec": {**msg["spec"], "sizes": [sizes[i] for i in run]},
               "seed": msg["seed"] + run[0]}  # fmt: skip
        shown = opts.on_progress
        said = (
            (lambda m, lo=run[0], show=shown: show(_shift_progress(m, lo, len(sizes))))
            if shown
            else None
        )
        reply = _reindex(
            await sup.request(one, timeout_s=timeout, on_progress=said),
            run[0],
            len(sizes),
        )
        out = reply if out is None else _merge(out, reply)
        if not _clean(reply):
            break
    assert out is not None  # runs is never empty (indices are)
    return out


def _cases(reply: WorkerReply) -> list[dict]:
    return (reply.data.get("result") or {}).get("cases", reply.cases)


def _clean(reply: WorkerReply) -> bool:
    return bool(reply.data.get("ok")) and not reply.timed_out and not reply.crashed


def _reindex(reply: WorkerReply, offset: int, total: int) -> WorkerReply:
    for c in _cases(reply):
        c["index"] = c.get("index", 0) + offset
    for c in reply.cases:
        if c not in _cases(reply):
            c["index"] = c.get("index", 0) + offset
    if offset and reply.last_progress.startswith("case "):
        reply.last_progress = _shift_progress(reply.last_progress, offset, total)
    return reply


def _shift_progress(progress: str, offset: int, total: int) -> str:
    import re

    m = re.match(r"case (\d+)/(\d+)", progress)
    if not m:
        return progress
    return f"case {int(m.group(1)) + offset}/{total}" + progress[m.end() :]


def _merge(a: WorkerReply, b: WorkerReply) -> WorkerReply:
    """Two partial runs as one reply: b's outcome, a's cases first."""
    cases = _cases(a) + _cases(b)
    data = dict(b.data)
    result = dict(data.get("result") or {})
    result["cases"] = cases
    data["result"] = result
    return WorkerReply(data, b.timed_out, b.crashed, b.last_progress, b.restarted,
                       b.stderr_tail, cases)  # fmt: skip


def estimate(measured: list[tuple[int, int, int]]):
    """cost(n) in the budget's units from the cases run: thread work and scheduler steps are
    each fitted on their own (steps grow far slower than n: a wave of 270,336 threads is one
    step per instruction), then priced: work + STEP_COST * steps."""
    ti = _model([(n, t) for n, t, _ in measured])
    steps = _model([(n, s) for n, _, s in measured], p_min=0.0)
    return lambda n: ti(n) + STEP_COST * steps(n)


def _model(points: list[tuple[int, int]], p_min: float = 1.0):
    """cost(n) = base + c1 * (n / n1) ** p: ``base`` is the smallest case's cost (launch and
    reference overhead, whatever n), the rest grows from the largest case like n ** p, p fitted
    against the largest case at most half its size (in [p_min, 3]: a GEMM's size is its side),
    else linear. With only the smallest case measured, sizes up to a few thousand run as they are."""
    pts = sorted((n, c) for n, c in points if c > 0)
    if not pts:
        return lambda n: 0.0
    n_min, base = pts[0]
    grow = [(n, c - base) for n, c in pts if n > max(n_min, 0) and c > base]
    if not grow:  # (steps: the same at every size so far, e.g. all in one wave: that many)
        return (lambda n: base) if p_min < 1 else (lambda n: base * max(1.0, n / FEW_THOUSAND))
    n1, c1 = grow[-1]
    p = 1.0
    lower = [(n, c) for n, c in grow if 2 * n <= n1]
    if lower:
        n0, c0 = lower[-1]
        if c1 > c0:
            p = min(3.0, max(p_min, math.log(c1 / c0) / math.log(n1 / n0)))
        else:  # no growth between the two: as little as p_min allows
            p = max(p_min, 0.0)
    return lambda n: base + c1 * (max(n, 0) / n1) ** p


def fitting_size(n: int, points: list[tuple[int, int, int]], budget: int) -> int:
    """``n`` when its estimated cost fits the budget; else 2**k + (n's remainder above its power
    of two, when smaller), the largest such size that fits: an odd size stays odd."""
    cost = estimate(points)
    if cost(n) <= budget:
        return n
    top = 1 << (n.bit_length() - 1)
    rest = n - top
    smallest = max((m for m, _, _ in points), default=1)
    k = top.bit_length() - 1
    while k > 0:
        m = (1 << k) + (rest if rest < (1 << k) else 0)
        if cost(m) <= budget or m <= smallest:
            return max(m, 1)
        k -= 1
    return 1
