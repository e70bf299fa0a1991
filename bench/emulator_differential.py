"""The CPU emulator against the H200, side by side: the same launches with the same inputs.

Each kernel runs through the real harness twice with the same seed: first on the emulator
(``device="cpu"``, whose budget may replace the largest sizes), then on the GPU (``device="gpu"``,
untimed) with exactly the sizes the emulator ran. Both workers save every verified launch's
outputs (``PTXLS_HARNESS_DUMP_OUTPUTS``), so each output is compared bit for bit; where bits
differ the report gives how many elements, the largest difference in units in the last place and
the relative error, and what in the PTX allows it (``.approx`` functions, float atomics whose
order differs, mul+add that ptxas may contract into fma). Every ``ptxls test`` verdict is compared
too, by class: pass; wrong element (the same failing case and first wrong element); memory fault
(the same case: the GPU faults or damages a guard band, the emulator names the access); race (both
fail the same case: the emulator names a shared-memory race, whose values the ISA leaves
undefined, so the GPU's wrong element cannot be required). Each side's detail (its wrong element,
its findings, its emulator-only warnings) stays in its own column, and agreement in every detail
is counted too.

Kernels: the library (fewshot/kernels), the planted cheaters (tests/data/cheaters), the planted
sanitizer kernels (tests/data/sanitizer/planted) and planted wrong kernels
(tests/data/emulator/wrong).

On the GPU machine (bench/device_emulator_differential.sh)::

    source scripts/device-env.sh && python3 bench/emulator_differential.py --out $OUT

``--self-check`` runs the "GPU" side on the emulator too (no GPU needed): every row must agree.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "fewshot" / "kernels"
DATA = ROOT / "tests" / "data"
BUDGET = 100_000_000  # work units per emulated case (gputest/emulated.py; 20 M thread-instructions before)
PARALLEL = 14  # emulator workers at once (the H200 machine has 16 cores)


def items() -> list[dict]:
    out = []
    for d in sorted(LIB.iterdir()):
        if (d / "kernel.ptx").is_file() and d.name != "hgemm_wgmma":  # wgmma: refused
            out.append({"name": d.name, "group": "library", "path": d / "kernel.ptx"})
    cheaters = DATA / "cheaters"
    for p in sorted(cheaters.glob("*.ptx")):
        out.append({"name": f"cheaters/{p.stem}", "group": "cheaters", "path": p,
                    "kernel": "vec_add", "ref": cheaters / "vec_add.cu"})  # fmt: skip
    for p in sorted((DATA / "sanitizer" / "planted").glob("*.ptx")):
        out.append({"name": f"planted/{p.stem}", "group": "planted sanitizer", "path": p})
    for p in sorted((DATA / "emulator" / "wrong").glob("*.ptx")):
        out.append({"name": f"wrong/{p.stem}", "group": "planted wrong", "path": p})
    for i, it in enumerate(out):
        it["seed"] = 1000 * (i + 1)  # case k of item i has seed 1000(i+1)+k: unique dump names
    return out


def ptx_traits(text: str) -> list[str]:
    """What in the PTX lets a GPU's float results differ from a correctly rounded emulation."""
    traits = []
    if re.search(r"\.approx\b", text) or re.search(r"\b(ex2|lg2|sin|cos|tanh)\.", text):
        traits.append(".approx")
    if re.search(r"\b(atom|red)(\.\w+)*\.(add)(\.\w+)*\.f(16|32|64)\b", text) or re.search(
        r"\b(atom|red)(\.\w+)*\.f(16|32|64)", text
    ):
        traits.append("float atomics")
    if re.search(r"\bmul(\.ftz)?\.f32\b", text) and re.search(r"\b(add|sub)(\.ftz)?\.f32\b", text):
        traits.append("mul+add (contractible)")
    if re.search(r"\bmma\.sync\b", text):
        traits.append("mma (accumulation order)")
    # a flag or aggregate read across blocks (look-back), global or generic address
    if re.search(r"\bld\.(relaxed|acquire|volatile)\.", text) and re.search(
        r"\badd(\.rn)?\.f32", text
    ):
        traits.append("cross-block float sums (look-back order)")
    return traits


# What fails a case, by class: the verdict each side gives is compared by class, the detail
# (which element, which access) stays in each side's own column.
PASS_CLASS, WRONG, FAULT, RACE, HANG = "pass", "wrong element", "memory fault", "race", "hang"
# the emulator's findings that a GPU meets as a fault (or a damaged guard band): an access
# outside every allocation, misaligned, or after a free
FAULT_KINDS = {"out-of-bounds", "misaligned", "invalid-address", "use-after-free"}
# the GPU's words for the same: the driver's faults, and the harness's guard bands
GPU_FAULT = re.compile(
    r"CUDA_ERROR_(ILLEGAL_ADDRESS|MISALIGNED_ADDRESS|INVALID_ADDRESS_SPACE)|out-of-bounds write"
)
RACE_WHY = ("without a barrier the ISA leaves open which write a racing read returns (PTX ISA "
            "section 8, Memory Consistency Model: each read returns the value of some write to "
            "the location, and only ordering narrows which), so a race's values are undefined and "
            "only the failing case is compared; the GPU shows the race's effect, the emulator "
            "names the race")  # fmt: skip
FAULT_WHY = ("the ISA defines no result for an access outside the state space's allocations: "
             "the GPU faults or damages a guard band, the emulator names the access (its column) "
             "and goes on, so only the failing case is compared")  # fmt: skip


def verdict_class(v: dict) -> tuple:
    """One side's ``ptxls test`` verdict as its class: ("pass",), ("wrong element", case,
    element), ("memory fault", case), ("race", case), ("hang", case), ("fail", case) for any
    other failure, or (status,) for a test that did not run to a verdict."""
    status, case = v["status"], v["failing_case"]
    if status == "pass":
        return (PASS_CLASS,)
    if status == "timeout":
        return (HANG, case)
    if status != "fail":
        return (status,)
    kinds = set(v.get("case_findings", v["findings"]))  # what failed the case (older runs: all)
    if "shared-race" in kinds:
        return (RACE, case)
    if kinds & FAULT_KINDS or GPU_FAULT.search(v["summary"]):
        return (FAULT, case)
    if v["first_wrong"]:
        return (WRONG, case, v["first_wrong"])
    return ("fail", case)


def class_text(c: tuple) -> str:
    if len(c) == 1:
        return c[0]
    where = f"n={c[1]}" + (f", {c[2]}" if len(c) > 2 else "")
    if c[0] == RACE:
        return f"fail, race: values undefined by the ISA ({where})"
    return f"{c[0]} ({where})"


def compare(r: dict) -> tuple[bool, str]:
    """(the same verdict by class?, in words): both pass; both fail the same case with the
    same wrong element; both fault in the same case; or both fail the same case where either
    names a race, whose values the ISA leaves undefined (the GPU cannot name a race, only
    show its effect)."""
    e, g = r["emulator"], r["gpu"]
    ce, cg = verdict_class(e), verdict_class(g)
    detail = r.get("detail_agrees", r["verdict_agrees"])
    same_cases = all(g["cases"].get(i, p) == p for i, p in e["cases"].items())
    if RACE in (ce[0], cg[0]):
        if e["status"] == g["status"] == "fail" and e["failing_case"] == g["failing_case"]:
            return (
                True,
                f"same: both fail n={e['failing_case']} (race: values undefined by the ISA)",
            )
        return False, "**DIFFERENT**"
    if ce != cg or not same_cases:
        return False, "**DIFFERENT**"
    if detail:
        return True, "same"
    if ce[0] == FAULT:
        how = g["summary"].split(" (")[0].removeprefix(f"case n={g['failing_case']}: ")
        return (
            True,
            f"same: memory fault in n={ce[1]} (the GPU: {how}; the emulator names the access)",
        )
    return True, "same class"


def row_class(r: dict) -> str:
    """The class both sides share where they agree (a race: the one the emulator names; the
    GPU's wrong element stays in its column), else each side's."""
    ce, cg = verdict_class(r["emulator"]), verdict_class(r["gpu"])
    if compare(r)[0] and RACE in (ce[0], cg[0]):
        return class_text(ce if ce[0] == RACE else cg)
    return class_text(ce) if ce == cg else f"{class_text(ce)} / {class_text(cg)}"


def classify(r: dict) -> str:
    """The verdicts side by side, in words (compare's)."""
    return compare(r)[1]


def compare_arrays(a: np.ndarray, b: np.ndarray) -> dict:
    """Bits of two outputs of the same launch: identical, or how far apart."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return {"identical": False, "why": f"shape/dtype {a.shape}{a.dtype} vs {b.shape}{b.dtype}"}
    size = a.dtype.itemsize
    ua, ub = a.view(np.uint8).reshape(-1, size), b.view(np.uint8).reshape(-1, size)
    diff = np.flatnonzero((ua != ub).any(axis=1))
    out = {"identical": diff.size == 0, "elements": int(len(a)), "differ": int(diff.size)}
    if diff.size and a.dtype.kind == "f":
        x, y = a[diff].astype(np.float64), b[diff].astype(np.float64)
        both_nan = np.isnan(x) & np.isnan(y)
        ints = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
        ia, ib = a[diff].view(ints).astype(np.int64), b[diff].view(ints).astype(np.int64)
        ulps = np.where(both_nan, 0, np.abs(ia - ib))
        rel = np.abs(x - y) / np.maximum(np.abs(x), 1e-30)
        out.update(max_ulps=int(ulps.max()), max_rel=float(np.nanmax(rel)) if rel.size else 0.0,
                   first=int(diff[0]))  # fmt: skip
    elif diff.size:
        out["first"] = int(diff[0])
    return out


def verdict(report) -> dict:
    """What ``ptxls test`` said: status, failing case, its first wrong element, every case's
    pass/fail, and the emulator's findings: those that fail a case (``findings``; of the failing
    case: ``case_findings``) apart from its emulator-only warnings (``warnings``)."""
    bad = report.failing_case
    first = None
    if bad is not None and bad.outputs:
        wrong = [o for o in bad.outputs if o.get("first_wrong")]
        if wrong:
            first = f"{wrong[0]['name']}[{wrong[0]['first_wrong'][0][0]}]"

    def kinds(found, warning: bool) -> list[str]:
        return sorted({f.get("kind", "") for f in found
                       if (f.get("severity", "error") == "warning") == warning})  # fmt: skip

    return {
        "status": report.status,
        "failing_case": bad.n if bad else None,
        "first_wrong": first,
        "cases": {c.index: c.passed for c in report.cases},
        "summary": report.summary[:300],
        "findings": kinds(report.findings, False),
        "case_findings": kinds(bad.findings, False) if bad else [],
        "warnings": kinds(report.findings, True),
    }


async def nvcc_items() -> list[dict]:
    """nvcc -O3's PTX of each library reference.cu, tested with the library's spec (numpy
    reference, no baseline): the instruction mix a compiler emits, on both sides."""
    from ptxls.gputest.emulated import cuda_to_ptx
    from ptxls.gputest.spec import spec_from_json

    out = []
    for d in sorted(LIB.iterdir()):
        cu, spec_file = d / "reference.cu", d / "spec.json"
        if not cu.is_file() or not spec_file.is_file() or d.name == "hgemm_wgmma":
            continue
        spec, _ = spec_from_json(spec_file.read_text())
        ptx, entry, err = await cuda_to_ptx(cu.read_text(), spec.kernel, "sm_90", None)
        if err or spec is None:
            print(f"{d.name} (nvcc): not built: {err[:200]}", flush=True)
            continue
        spec.kernel, spec.reference = entry, None
        out.append({"name": f"{d.name} (nvcc -O3)", "group": "nvcc -O3", "ptx": ptx,
                    "kernel": entry, "spec": spec, "path": cu})  # fmt: skip
    return out


async def run_item(it: dict, device: str, sizes, sup, emu_sup) -> object:
    from ptxls.gputest import api

    if it.get("spec") is not None:  # nvcc's PTX with the library's spec
        return await api.run_gpu_test(
            it["ptx"], it["kernel"], it["spec"], seed=it["seed"], sizes=sizes, device=device,
            time_it=False, timeout_s=120, supervisor=sup, emulator_supervisor=emu_sup,
            emulator_budget=BUDGET,
        )  # fmt: skip
    text = Path(it["path"]).read_text()
    ref = Path(it["ref"]).read_text() if it.get("ref") else None
    return await api.run_gpu_test(
        text, it.get("kernel") or _first_entry(text), ptx_path=str(it["path"]),
        reference_cuda=ref, reference_path=str(it["ref"]) if it.get("ref") else None,
        seed=it["seed"], sizes=sizes, device=device, time_it=False, timeout_s=120,
        supervisor=sup, emulator_supervisor=emu_sup, emulator_budget=BUDGET,
    )  # fmt: skip


def _first_entry(text: str) -> str:
    from ptxls.frontend.ptx import find_entries

    return find_entries(text)[0].name


async def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "emulator-differential"))
    ap.add_argument("--self-check", action="store_true", help="the 'GPU' side on the emulator too")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--render", metavar="JSON", help="only write the .md of a results .json")
    ap.add_argument("--nvcc", action="store_true", help="also nvcc -O3's PTX of each reference.cu")
    ap.add_argument("--tag", default="", help="added to the results' file name")
    args = ap.parse_args(argv)
    if args.render:
        data = json.loads(Path(args.render).read_text())
        Path(args.render).with_suffix(".md").write_text(markdown(data["rows"], data["meta"]))
        return 0
    from ptxls.frontend.ptx import find_entries
    from ptxls.gputest.supervisor import Supervisor, default_command

    work = Path(tempfile.mkdtemp(prefix="emu-diff-"))
    dumps = {"cpu": work / "cpu", "gpu": work / "gpu"}
    for d in dumps.values():
        d.mkdir()
    env = {k: {**os.environ, "PTXLS_HARNESS_DUMP_OUTPUTS": str(v)} for k, v in dumps.items()}
    todo = items()
    if args.nvcc:
        extra = await nvcc_items()
        for i, it in enumerate(extra):
            it["seed"] = 1000 * (len(todo) + i + 1)
        todo += extra
    if args.only:
        todo = [i for i in todo if any(o in i["name"] for o in args.only)]
    # one item per kernel entry (the planted files hold several)
    expanded = []
    for it in todo:
        text = it.get("ptx") or Path(it["path"]).read_text()
        names = [it["kernel"]] if it.get("kernel") else [e.name for e in find_entries(text)]
        for k, name in enumerate(names):
            expanded.append({**it, "kernel": name, "seed": it["seed"] + 100 * k,
                             "name": it["name"] + (f":{name}" if len(names) > 1 else "")})  # fmt: skip
    started = time.monotonic()
    sem = asyncio.Semaphore(PARALLEL)

    async def emulate(it):
        async with sem:
            sup = Supervisor(default_command("cpu"), env=env["cpu"])
            try:
                t0 = time.monotonic()
                r = await run_item(it, "cpu", None, None, sup)
                return r, time.monotonic() - t0
            finally:
                await sup.close()

    emulated = await asyncio.gather(*(emulate(it) for it in expanded))
    t_emu = time.monotonic() - started
    other = "cpu" if args.self_check else "gpu"
    gpu_sup = Supervisor(default_command(other), env=env["gpu"])
    rows = []
    try:
        for it, (emu, emu_s) in zip(expanded, emulated, strict=True):
            sizes = list(emu.sizes) or None  # as the emulator ran them: case i is case i
            t0 = time.monotonic()
            gpu = await run_item(it, other, sizes, gpu_sup if other == "gpu" else None,
                                 gpu_sup if other == "cpu" else None)  # fmt: skip
            rows.append(_row(it, emu, gpu, emu_s, time.monotonic() - t0, dumps))
            print(f"{it['name']}: emu {emu.status} / {other} {gpu.status} -> "
                  f"{'agree' if rows[-1]['verdict_agrees'] else 'DISAGREE'}; outputs "
                  f"{rows[-1]['outputs_summary']}", flush=True)  # fmt: skip
    finally:
        await gpu_sup.close()
    meta = {
        "date": datetime.date.today().isoformat(),
        "machine": platform.node(),
        "python": platform.python_version(),
        "other_side": other,
        "device": rows[0]["gpu_device"] if rows else "",
        "budget": BUDGET,
        "budget_units": "work units",  # (runs before the work budget: thread-instructions)
        "seconds": {
            "emulator_phase": round(t_emu, 1),
            "total": round(time.monotonic() - started, 1),
        },  # fmt: skip
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{'self' if args.self_check else 'h200'}-{meta['date']}{args.tag}"
    stem.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    stem.with_suffix(".md").write_text(markdown(rows, meta))
    print(markdown(rows, meta))
    return 0


def _row(it, emu, gpu, emu_s, gpu_s, dumps) -> dict:
    ve, vg = verdict(emu), verdict(gpu)
    same_cases = {i: p for i, p in ve["cases"].items() if i in vg["cases"]}
    detail = (
        ve["status"] == vg["status"]
        and ve["failing_case"] == vg["failing_case"]
        and ve["first_wrong"] == vg["first_wrong"]
        and all(vg["cases"][i] == p for i, p in same_cases.items())
    )
    outputs = []
    for c in emu.cases:
        for f in sorted(dumps["cpu"].glob(f"{c.seed}-*.npy")):
            g = dumps["gpu"] / f.name
            if not g.exists():
                continue
            cmp = compare_arrays(np.load(f), np.load(g))
            outputs.append({"case": c.index, "n": c.n, "output": f.stem.split("-", 1)[1], **cmp})
    text = it.get("ptx") or Path(it["path"]).read_text()
    identical = sum(o["identical"] for o in outputs)
    worst = max((o.get("max_ulps", 0) for o in outputs), default=0)
    summary = f"{identical}/{len(outputs)} bit-identical" + (f", max {worst} ulp" if worst else "")
    row = {
        "name": it["name"], "group": it["group"], "kernel": it["kernel"],
        "sizes": emu.sizes, "emulator": ve, "gpu": vg, "detail_agrees": detail,
        "outputs": outputs, "outputs_summary": summary,
        "ptx_traits": ptx_traits(text), "emu_seconds": round(emu_s, 2),
        "gpu_seconds": round(gpu_s, 2), "gpu_device": (gpu.device or {}).get("name", ""),
        "notes": [n for n in emu.notes if "emulated sizes" in n],
    }  # fmt: skip
    row["verdict_agrees"], row["verdict"] = compare({**row, "verdict_agrees": detail})
    row["emulator_class"] = class_text(verdict_class(ve))
    row["gpu_class"] = class_text(verdict_class(vg))
    row["class"] = row_class(row)
    return row


def markdown(rows: list[dict], meta: dict) -> str:
    agree = sum(compare(r)[0] for r in rows)
    detail = sum(r.get("detail_agrees", r["verdict_agrees"]) for r in rows)
    lines = [
        "# Emulator vs GPU: the same launches, the same inputs",
        "",
        f"{meta['date']}, {meta['machine']}, GPU side: {meta['device'] or meta['other_side']}; "
        f"`bench/emulator_differential.py` (emulator budget {meta['budget']:,} "
        f"{meta.get('budget_units', 'thread-instructions')} per case; the GPU ran the sizes the "
        "emulator ran, untimed). "
        f"**Verdicts the same by class: {agree}/{len(rows)}** (pass; wrong element: the same "
        "case and element; memory fault: the same case; race: both fail the same case); "
        f"the same in every detail (status, failing case, first wrong element, every case): "
        f"{detail}/{len(rows)}. Seconds: {meta['seconds']}.",
        "",
        "Classes: a **race** (the emulator names a shared-memory race) agrees when both fail the "
        f"same case: {RACE_WHY}. A **memory fault** agrees when both fault in the same case: "
        f"{FAULT_WHY}. Emulator-only warnings (a read of an output the harness poisoned, before "
        "the kernel wrote it) are shown in the emulator's column and change no verdict.",
        "",
        "| kernel | sizes | emulator | GPU | class (emulator / GPU) | verdict | outputs | PTX allows |",
        "|:--|:--|:--|:--|:--|:--|:--|:--|",
    ]
    for r in rows:
        e, g = r["emulator"], r["gpu"]

        def said(v):
            s = v["status"]
            if v["failing_case"] is not None:
                s += f" n={v['failing_case']}"
            if v["first_wrong"]:
                s += f" {v['first_wrong']}"
            if v["findings"]:
                s += f" ({', '.join(v['findings'])})"
            if v.get("warnings"):
                s += f"; warning, emulator-only: {', '.join(v['warnings'])}"
            return s

        classes = row_class(r)
        lines.append(
            f"| {r['name']} | {' '.join(map(str, r['sizes']))} | {said(e)} | {said(g)} | "
            f"{classes} | {compare(r)[1]} | {r['outputs_summary']} | {', '.join(r['ptx_traits'])} |"
        )
    same = [r["name"] for r in rows if r["outputs"] and all(o["identical"] for o in r["outputs"])]
    differ = [r for r in rows if any(not o["identical"] for o in r["outputs"])]
    lines += [
        "",
        f"Outputs bit-identical in every case: {len(same)} kernels ({', '.join(same)}).",
        "",
        "Where bits differ, and why the ISA allows it (each still passes or fails the same test):",
        "",
    ]
    why = {
        ".approx": "`.approx` functions (ex2, rsqrt, tanh...) are within the ISA's stated error, "
        "not correctly rounded: the emulator computes them to its own bounds",
        "mul+add (contractible)": "ptxas may contract a `mul.f32` and an `add.f32` without `.rn` "
        "into one fma (one rounding); the emulator rounds twice as the PTX is written",
        "mma (accumulation order)": "`mma.sync`'s internal accumulation order and intermediate "
        "rounding are not specified by the ISA",
        "cross-block float sums (look-back order)": "blocks combine their predecessors' sums in "
        "an order that depends on which ones have published (the GPU itself differs in the last "
        "bits from launch to launch)",
    }
    racy = [r for r in differ if RACE in {verdict_class(r[k])[0] for k in ("emulator", "gpu")}]
    differ = [r for r in differ if r not in racy]  # a race's values: undefined (said in its row)
    for r in differ:
        worst = max(o.get("max_ulps", 0) for o in r["outputs"])
        rel = max(o.get("max_rel", 0.0) for o in r["outputs"])
        told = "; ".join(why[t] for t in r["ptx_traits"] if t in why) or "**not explained**"
        lines.append(f"- {r['name']}: up to {worst} ulp (relative {rel:.1e}): {told}.")
    if not differ:
        lines.append(
            "- none" + (" (but the races' values, which no one can require)" if racy else "")
        )
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
