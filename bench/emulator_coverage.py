"""Which kernels the CPU emulator runs, through the real test harness (``device="cpu"``):

- every kernel of the library (fewshot/kernels/*/kernel.ptx, its spec.json: sizes, numpy
  reference, nvcc baseline as its PTX) — hgemm_wgmma may be refused (wgmma), named;
- nvcc -O3's PTX of every library reference.cu (the library's spec, no baseline) and
  examples/vec_add.ptx against nvcc's PTX of examples/vec_add.cu, examples/gpu/*.cu;
- Triton's PTX of examples/*triton*.py (``ptxls lower --backend triton``'s PTX), checked against
  the Triton kernel itself as Triton compiles it to PTX, both on the emulator;
- tests/data/cheaters (each must pass: they compute c = a + b on a fresh launch) and the planted
  sanitizer kernels (tests/data/sanitizer/planted: each must be caught by a finding).

Writes bench/results/emulator-coverage/<machine>-<date>.json and .md: per kernel the verdict (pass,
fail and why, refused and which instruction, hang), the sizes run (and which were replaced to fit
the budget), the emulator's findings, thread-instructions and seconds; and the opcode families
present in the kernels that ran to a verdict.

    .venv/bin/python bench/emulator_coverage.py [--only NAME ...] [--budget N] [--part NAME]

(``--part NAME`` writes <machine>-<date>-NAME: a second run of the day beside the first.)
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from machine import gpu_name, machine_name, result_path  # noqa: E402

LIB = ROOT / "fewshot" / "kernels"
OUT = ROOT / "bench" / "results" / "emulator-coverage"

# wgmma (warpgroup MMA) is not emulated: the one library kernel the issue lets be refused
EXPECT_REFUSED = {"hgemm_wgmma"}
# What each planted kernel must make the emulator say (the kinds of emulator/errors.py).
PLANTED_EXPECT = {  # by kernel
    "stencil_no_halo": "out-of-bounds",
    "index_scaled_twice": "out-of-bounds",
    "swap_warps_no_barrier": "race",
    "swap_warps": "pass",  # the same swap with its barrier
    # reads its output before writing it: a GPU reads the harness's poison there and max() with
    # the poison keeps x, so the case passes on both devices; the emulator warns on the line
    "max_into_out": "warn:uninitialized",
}


# skips_when_done reads c[n-1] (its output) before writing it, to skip the work when it already
# holds the answer: every launch starts with a pure output unwritten (the poison is the
# harness's), so the emulator names that read on its line, as compute-sanitizer's initcheck
# does -- as a warning (emulator/errors.py WARNING_KINDS): a GPU reads the poison there and the
# outputs are right, so the case passes on both devices. The GPU test catches the cheat only in
# its timed re-runs.
#
# An expectation is "pass" or "refused" (the verdict), "warn:KIND" (the verdict is pass and a
# warning's kind contains KIND), or KIND (the verdict is fail and a finding's kind contains
# KIND: caught).
CHEATER_EXPECT = {"skips_when_done": "warn:uninitialized"}


def judge(expect: str, verdict: str, findings: list[dict]) -> bool | None:
    """Whether a row's verdict and findings (kind, severity) meet its expectation."""
    if expect in ("pass", "refused"):
        return verdict == expect
    if expect.startswith("warn:"):
        want = expect.removeprefix("warn:")
        return verdict == "pass" and any(
            want in f.get("kind", "") and f.get("severity") == "warning" for f in findings
        )
    if expect:
        return verdict == "fail" and any(expect in f.get("kind", "") for f in findings)
    return None


def _kinds(findings: list[dict]) -> list[str]:
    """Each kind once, a warning's marked: 'uninitialized-global (warning)'."""
    return sorted(
        {f.get("kind", "") + (" (warning)" if f.get("severity") == "warning" else "")
         for f in findings}
    )  # fmt: skip


def families(ptx: str, entry: str | None = None) -> list[str]:
    """Opcode families of a module (``ld.global``, ``atom.shared``, ``mma``, ``shfl``...)."""
    from ptxls.emulator.decode import decode

    try:
        prog = decode(ptx)
    except Exception:  # refused or unreadable: no families claimed
        return []
    out = set()
    for f in prog.functions.values():
        for ins in f.instrs:
            out.add(family(ins.op, ins.mods))
    return sorted(out)


SPACED = ("ld", "st", "atom", "red", "cvta", "cp", "prefetch", "fence", "membar", "bar", "barrier")


SPACES = ("global", "shared", "param", "local", "const", "gl", "cta", "sys")


def family(op: str, mods: tuple) -> str:
    """``ld.global``, ``atom.shared``, ``bar.sync``...: the op and its state space (or first
    modifier where it has none)."""
    if op == "cp" and "async" in mods:
        return "cp.async"
    if op in SPACED and mods:
        space = next((m for m in mods if m in SPACES), mods[0])
        return f"{op}.{space}"
    return op


async def run_one(item: dict, budget: int | None) -> dict:
    from ptxls.gputest import api

    started = time.monotonic()
    kw = dict(device="cpu", seed=7, emulator_budget=budget)
    try:
        if "spec" in item:
            if item.get("triton_reference"):
                kw["triton_reference"] = item["triton_reference"]
            report = await api.run_gpu_test(item["ptx"], item["kernel"], item["spec"], **kw)
            reports = [report]
        else:
            reports = await api.run_gpu_test_file(
                item["path"], item.get("kernel"), ref=item.get("ref"), **kw
            )
    except Exception as e:  # a harness bug: recorded, the run goes on
        return {**_meta(item), "verdict": "harness-error", "why": f"{type(e).__name__}: {e}"}
    rows = []
    for r in reports:
        rows.append(_row(item, r, time.monotonic() - started))
    return rows if len(rows) > 1 else rows[0]


def _meta(item: dict) -> dict:
    return {"name": item["name"], "group": item["group"], "source": item.get("source", "")}


def _row(item: dict, r, seconds: float) -> dict:
    bad = r.failing_case
    why = r.summary if r.status != "pass" else ""
    verdict = r.status
    if r.status == "error" and "does not implement" in r.summary:
        verdict = "refused"
    expect = item.get("expect")
    if item["group"] == "planted":
        expect = PLANTED_EXPECT.get(r.kernel, "")
    kinds = _kinds(r.findings)
    met = judge(expect or "", verdict, r.findings)
    text = item.get("ptx") or (Path(item["path"]).read_text() if item.get("path") else "")
    return {
        **_meta(item),
        "name": item["name"] + (f":{r.kernel}" if item["group"] == "planted" else ""),
        "kernel": r.kernel,
        "verdict": verdict,
        "expected": expect or "",
        "as_expected": met,
        "why": why[:400],
        "failing_case": bad.n if bad else None,
        "first_wrong": (bad.outputs[0].get("first_wrong") or [None])[0]
        if bad and bad.outputs
        else None,
        "sizes": r.sizes,
        "cases_passed": sum(c.passed for c in r.cases),
        "findings": [
            {
                "kind": f.get("kind"),
                "severity": f.get("severity", "error"),
                "line": f.get("line"),
                "text": f.get("text"),
            }
            for f in r.findings[:8]
        ],  # fmt: skip
        "finding_kinds": kinds,
        "notes": [n for n in r.notes if "emulated sizes" in n or "instead" in n],
        "thread_instructions": sum(c.thread_instructions or 0 for c in r.cases),
        "seconds": round(seconds, 2),
        "reference": r.reference,
        "families": families(text)
        if verdict not in ("refused", "build-error", "spec-error")
        else [],
    }


# -- what runs -------------------------------------------------------------------------------


def library_items() -> list[dict]:
    return [
        {"name": d.name, "group": "library", "path": str(d / "kernel.ptx"),
         "expect": "refused" if d.name in EXPECT_REFUSED else "pass",
         "source": f"fewshot/kernels/{d.name}/kernel.ptx"}
        for d in sorted(LIB.iterdir()) if (d / "kernel.ptx").is_file()
    ]  # fmt: skip


async def nvcc_items(work: Path) -> list[dict]:
    """nvcc -O3's PTX of each library reference.cu, tested with the library's spec."""
    from ptxls.gputest.emulated import cuda_to_ptx
    from ptxls.gputest.spec import spec_from_json
    from ptxls.lowering.nvcc_reference import select_entry

    items = []
    for d in sorted(LIB.iterdir()):
        cu, spec_file = d / "reference.cu", d / "spec.json"
        if not cu.is_file() or not spec_file.is_file():
            continue
        spec, problems = spec_from_json(spec_file.read_text())
        item = {"name": f"{d.name} (nvcc)", "group": "nvcc -O3",
                "expect": "refused" if d.name in EXPECT_REFUSED else "pass",
                "source": f"fewshot/kernels/{d.name}/reference.cu"}  # fmt: skip
        if spec is None:
            items.append({**item, "error": "; ".join(map(str, problems))})
            continue
        arch = "sm_90a" if "wgmma" in cu.read_text() else "sm_90"  # wgmma needs the a-variant
        ptx, entry, err = await cuda_to_ptx(cu.read_text(), spec.kernel, arch, None)
        if err:
            items.append({**item, "error": err})
            continue
        ptx, entry, _ = select_entry(ptx, entry, rename=True)
        spec.kernel = entry
        spec.reference = None  # the numpy reference checks it; no baseline of itself
        items.append({**item, "ptx": ptx, "kernel": entry, "spec": spec})
    items.append({"name": "examples/vec_add.ptx vs vec_add.cu", "group": "nvcc -O3",
                  "path": str(ROOT / "examples" / "vec_add.ptx"), "expect": "pass",
                  "source": "examples/vec_add.ptx (reference: nvcc -O3 PTX of vec_add.cu)"})  # fmt: skip
    for cu in sorted((ROOT / "examples" / "gpu").glob("*.cu")):
        items.append({"name": f"examples/gpu/{cu.name}", "group": "nvcc -O3", "path": str(cu),
                      "source": f"examples/gpu/{cu.name} (nvcc -O3 PTX)"})  # fmt: skip
    return items


async def triton_items() -> list[dict]:
    from ptxls.gputest.spec_source import SpecSource, resolve_spec
    from ptxls.lowering.compiler_backend import lower_nvcc
    from ptxls.lowering.job import LowerJob

    items = []
    for py in sorted((ROOT / "examples").glob("*triton*.py")):
        text = py.read_text()
        for kernel in re.findall(r"@triton\.jit\s*\ndef\s+(\w+)", text):
            item = {"name": f"{py.name}:{kernel} (Triton)", "group": "Triton",
                    "source": f"examples/{py.name}", "expect": "pass"}  # fmt: skip
            out = await lower_nvcc(LowerJob(py, text, backend="triton", kernel=kernel), None)
            if not out.ok:
                items.append({**item, "error": out.message})
                continue
            res = resolve_spec(SpecSource("triton", text, kernel, str(py)))
            spec, problems, build = res.spec, res.problems, res.build
            if spec is None or problems:
                items.append({**item, "error": "; ".join(map(str, problems))})
                continue
            if ".extern .shared" in out.ptx and spec.launch.shared in ("", "0"):
                spec.launch.shared = str(await triton_shared_bytes(text, kernel, py))
            # the reference: the Triton kernel's own PTX (Triton compiles it; it cannot launch it
            # without a GPU), on the emulator
            items.append({**item, "ptx": out.ptx, "kernel": kernel, "spec": spec,
                          "triton_reference": build.to_json()})  # fmt: skip
    return items


async def triton_shared_bytes(text: str, kernel: str, py: Path) -> int:
    """The dynamic shared memory Triton's compile of the kernel asks for (its metadata), as
    ``ptxls test`` reads it for a Triton PTX (gputest/triton_ref.paired_triton)."""
    from ptxls.gputest.triton_ref import gputest_types
    from ptxls.toolchain.triton_compile import recipe_for, triton_to_ptx

    build, _ = recipe_for(text, kernel, str(py), gputest_types(text, kernel))
    compiled = await triton_to_ptx(build.to_json(), arch="sm_90")
    return int((compiled.metadata or {}).get("shared", 0)) if compiled.ok else 0


def planted_items() -> list[dict]:
    items = []
    cheaters = ROOT / "tests" / "data" / "cheaters"
    for p in sorted(cheaters.glob("*.ptx")):  # as tests/gpu/test_library_cheaters.py runs them
        items.append({"name": f"cheaters/{p.name}", "group": "cheaters", "path": str(p),
                      "kernel": "vec_add", "ref": str(cheaters / "vec_add.cu"),
                      "expect": CHEATER_EXPECT.get(p.stem, "pass"),
                      "source": f"tests/data/cheaters/{p.name} (reference: vec_add.cu there)"})  # fmt: skip
    for p in sorted((ROOT / "tests" / "data" / "sanitizer" / "planted").glob("*.ptx")):
        items.append({"name": f"planted/{p.name}", "group": "planted", "path": str(p),
                      "expect": PLANTED_EXPECT.get(p.stem, ""),
                      "source": f"tests/data/sanitizer/planted/{p.name}"})  # fmt: skip
    return items


# -- report ------------------------------------------------------------------------------------


def rejudge(path: Path) -> int:
    """The expectations of today's code applied to rows already run (the verdicts stay)."""
    data = json.loads(path.read_text())
    for r in data["rows"]:
        stem = Path(r["name"]).stem
        if r["group"] == "cheaters" and stem in CHEATER_EXPECT:
            r["expected"] = CHEATER_EXPECT[stem]
            r["as_expected"] = judge(r["expected"], r["verdict"], r.get("findings", []))
    rows, meta = data["rows"], data["meta"]
    unexpected = [r["name"] for r in rows if r.get("as_expected") is False]
    meta["totals"] = {**{k: v for k, v in meta["totals"].items() if k != "unexpected"},
                      "unexpected": unexpected}  # fmt: skip
    path.write_text(json.dumps(data, indent=1))
    path.with_suffix(".md").write_text(markdown(rows, meta))
    print(markdown(rows, meta))
    return 0


def _load(v) -> str:
    return "/".join(f"{x:.1f}" for x in v) if v else "?"


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        "# Emulator coverage",
        "",
        f"{meta['date']}, {meta['machine']} ({meta['cpu']}), Python {meta['python']}; "
        f"`{meta.get('command', '.venv/bin/python bench/emulator_coverage.py')}`; every kernel "
        "through the real harness "
        f'on the CPU emulator (`device="cpu"`, seed 7), budget {meta["budget"]:,} '
        "work units per case (gputest/emulated.py: the engine's work per thread by instruction "
        "class, and per scheduler step). Emulated results: not GPU-verified, no times "
        "(the s column is this benchmark's wall time per kernel test).",
        "",
        f"The whole library's tests: {meta.get('library_seconds')} s wall; load average "
        f"{_load(meta.get('load_average_start'))} at the start, {_load(meta.get('load_average_end'))} "
        "at the end (a shared 2-core machine: other jobs ran beside it).",
        "",
        "Expected: `pass`, `refused`, a finding's kind (the case fails and a finding names "
        "it: caught), or `warn:KIND` (the case passes, as on a GPU, and an emulator-only "
        "warning names it on its line).",
        "",
        "| group | kernel | verdict | expected | sizes | findings | thread-instr. | s |",
        "|:--|:--|:--|:--|:--|:--|--:|--:|",
    ]
    for r in rows:
        verdict = r["verdict"] + (
            "" if r.get("as_expected") in (None, True) else " (**unexpected**)"
        )
        why = f": {r['why'][:120]}" if r.get("why") and r["verdict"] != "pass" else ""
        sizes = " ".join(map(str, r.get("sizes", [])))
        swaps = [
            re.search(r"n=(\d+) would.*?(ran n=(\d+) instead|not run)", n)
            for n in r.get("notes", [])
        ]
        said = [f"{m.group(1)}→{m.group(3) or 'not run'}" for m in swaps if m]
        if said:
            sizes += " (" + ", ".join(said) + ")"
        lines.append(
            f"| {r['group']} | {r['name']} | {verdict}{why} | {r.get('expected', '')} | "
            f"{sizes} | {', '.join(r.get('finding_kinds', []))} | "
            f"{r.get('thread_instructions', 0):,} | {r.get('seconds', '')} |"
        )
    fams = meta["families"]
    lines += ["", f"Opcode families in kernels that ran to a verdict ({len(fams)}):", "",
              ", ".join(f"`{f}`" for f in fams), ""]  # fmt: skip
    lines += [f"Totals: {meta['totals']}", ""]
    return "\n".join(lines)


async def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", help="names containing one of these")
    ap.add_argument("--budget", type=int, help="thread-instructions per case")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--part", default="", help="suffix of the result's file name")
    ap.add_argument("--rejudge", metavar="JSON", help="re-judge a results JSON's rows against "
                    "the expectations here (no run) and rewrite its .json and .md")  # fmt: skip
    args = ap.parse_args(argv)
    from ptxls.gputest.emulated import CASE_BUDGET
    from ptxls.gputest.supervisor import close_shared

    if args.rejudge:
        return rejudge(Path(args.rejudge))

    load_start = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="emu-coverage-"))
    try:
        items = library_items() + await nvcc_items(work) + await triton_items() + planted_items()
        if args.only:
            items = [i for i in items if any(o in i["name"] or o == i["group"] for o in args.only)]
        rows: list[dict] = []
        for item in items:
            if "error" in item:
                rows.append(
                    {**_meta(item), "verdict": "could not build", "why": item["error"][:300]}
                )
                continue
            print(f"… {item['name']}", file=sys.stderr, flush=True)
            got = await run_one(item, args.budget)
            for r in got if isinstance(got, list) else [got]:
                rows.append(r)
                print(f"  {r['verdict']} {r.get('why', '')[:160]} ({r.get('seconds')} s)",
                      file=sys.stderr, flush=True)  # fmt: skip
    finally:
        await close_shared()
        shutil.rmtree(work, ignore_errors=True)
    fams = sorted({f for r in rows for f in r.get("families", [])})
    totals = {}
    for r in rows:
        totals[r["verdict"]] = totals.get(r["verdict"], 0) + 1
    unexpected = [r["name"] for r in rows if r.get("as_expected") is False]
    meta = {
        "date": datetime.date.today().isoformat(),
        "machine": machine_name(),
        "host": platform.node(),
        "cpu": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "gpu": gpu_name(),
        "command": " ".join([".venv/bin/python bench/emulator_coverage.py", *argv]),
        "budget": args.budget or CASE_BUDGET,
        "families": fams,
        "totals": {**totals, "unexpected": unexpected},
        # the whole library's tests (the "whole library on the emulator" figure), and
        # the machine's load around the run: the 2-core machine is shared
        "library_seconds": round(
            sum(r.get("seconds") or 0 for r in rows if r.get("group") == "library"), 1
        ),  # fmt: skip
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
    }
    if not args.no_write:
        stem = result_path("emulator-coverage", "json", args.part).with_suffix("")
        stem.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        stem.with_suffix(".md").write_text(markdown(rows, meta))
        print(f"wrote {stem}.json and .md", file=sys.stderr)
    print(markdown(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
