"""compute-sanitizer on the H200 (issue 12.3), in one process:

    python3 bench/sanitizer_h200.py --out "$OUT" [--jobs 4] [--wheel-sanitizer PATH]

1. the planted kernels (tests/data/sanitizer/planted/*.ptx) under the tools that should see
   them, each report placed on its PTX line (checked against the line the file marks);
2. every library kernel (fewshot/kernels/*/kernel.ptx) under memcheck + racecheck: clean;
3. how slow: the same test at the same size without the sanitizer (a fresh worker, and the warm
   one), against the sanitized run, whole test and kernel launch;
4. optionally the pip wheel's compute-sanitizer on one planted kernel (does it work with this
   driver?).

Writes sanitizer-h200.json (everything, with each run's whole log), sanitizer-h200.txt (the
summary) and logs/*.log (the raw outputs the parser tests use) under --out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLANTED = ROOT / "tests" / "data" / "sanitizer" / "planted"
# (file, kernel, tools, {tool: lines that must be reported}) — the lines are the planted bugs
PLANTED_RUNS = [
    ("missing_barrier.ptx", "swap_warps_no_barrier", ("memcheck", "racecheck"), "racecheck"),
    ("missing_barrier.ptx", "swap_warps", ("racecheck",), None),
    ("shared_oob.ptx", "stencil_no_halo", ("memcheck",), "memcheck"),
    ("shared_oob.ptx", "index_scaled_twice", ("memcheck",), "memcheck"),
    ("uninit_read.ptx", "max_into_out", ("memcheck", "initcheck"), "initcheck"),
    ("missing_barrier.ptx", "swap_warps_no_barrier", ("synccheck",), None),
]

lines_out: list[str] = []


def say(text: str = "") -> None:
    print(text, flush=True)
    lines_out.append(text)


def marked_lines(path: Path, kernel: str) -> dict[str, list[int]]:
    """Lines a planted file marks as its bug: the store/load named in the kernel's comments
    (the line numbers are found by the instruction comment tags, see PLANTED_BUG_TAGS)."""
    tags = {
        "swap_warps_no_barrier": ["tile[tid] = x[i]", "tile[tid ^ 32]"],
        "stencil_no_halo": ["tile[tid + 1]"],
        "index_scaled_twice": ["past the tile"],
        "max_into_out": ["before anything wrote it"],
    }.get(kernel, [])
    text = path.read_text().splitlines()
    start = next(i for i, ln in enumerate(text) if f".entry {kernel}(" in ln)
    found = []
    for tag in tags:
        found += [i + 1 for i, ln in enumerate(text) if i > start and tag in ln][:1]
    return {"lines": found}


LOGS: Path | None = None


def save_logs(d: dict, prefix: str = "", suffix: str = "") -> None:
    """Each run's raw log as soon as it exists (a run cut by the call's limit keeps what ran)."""
    if LOGS is None:
        return
    LOGS.mkdir(parents=True, exist_ok=True)
    for r in d["runs"]:
        (LOGS / f"{prefix}{d['kernel']}-{r['tool']}{suffix}.log").write_text(r.get("log") or "")


async def one(file: str, kernel: str, tools, opts_kw: dict) -> dict:
    from ptxls.gputest.sanitize import SanitizeOptions, sanitize_ptx

    path = PLANTED / file if not os.path.isabs(file) else Path(file)
    text = path.read_text()
    started = time.monotonic()
    res = await sanitize_ptx(
        text, kernel, ptx_path=str(path), options=SanitizeOptions(tools=tuple(tools), **opts_kw)
    )
    d = res.to_dict()
    d["wall_s"] = round(time.monotonic() - started, 2)
    d["file"] = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    return d


def show(d: dict, expect_tool: str | None = None, expect_lines: list[int] | None = None) -> bool:
    ok = True
    say(f"## {d['file']} :: {d['kernel']} — {d['status']}: {d['summary']}  "
        f"(n={d.get('sizes')}, {d['wall_s']} s)")  # fmt: skip
    for run in d["runs"]:
        case = ((run.get("test") or {}).get("cases") or [{}])[0]
        kern = (case.get("phases") or {}).get("kernel")
        say(f"- {run['tool']}: {len(run['findings'])} finding(s), {run['seconds']:.2f} s"
            f"{f', kernel launch {kern * 1000:.1f} ms' if kern else ''}; harness: "
            f"{(run.get('test') or {}).get('status')}")  # fmt: skip
        for f in run["findings"]:
            say(f"    line {f['line']}" + (f"+{f['other_line']}" if f.get("other_line") else "")
                + f": {f['text']}")  # fmt: skip
            for t in f.get("line_texts") or []:
                if t:
                    say(f"        | {t}")
        for n in run["notes"]:
            say(f"    note: {n}")
    if expect_tool:
        got = {ln for r in d["runs"] if r["tool"] == expect_tool for f in r["findings"]
               for ln in (f["line"], f.get("other_line")) if ln}  # fmt: skip
        ok = bool(expect_lines) and set(expect_lines) <= got
        say(f"  => expected {expect_tool} on line(s) {expect_lines}: {'OK' if ok else 'MISSING'}"
            f" (reported: {sorted(got)})")  # fmt: skip
    return ok


async def timing(file: str, kernel: str, n: int) -> dict:
    """The same test at the same size: a fresh plain worker, the warm one, and untimed."""
    from ptxls.gputest.api import run_gpu_test
    from ptxls.gputest.supervisor import Supervisor

    path = PLANTED / file if not os.path.isabs(file) else Path(file)
    text = path.read_text()
    out = {}
    sup = Supervisor()
    try:
        for label in ("plain, fresh worker", "plain, warm worker"):
            t0 = time.monotonic()
            rep = await run_gpu_test(text, kernel, ptx_path=str(path), sizes=[n], time_it=False,
                                     supervisor=sup)  # fmt: skip
            kern = (rep.cases[0].phases or {}).get("kernel") if rep.cases else None
            out[label] = {"wall_s": round(time.monotonic() - t0, 3), "kernel_s": kern,
                          "status": rep.status}  # fmt: skip
    finally:
        await sup.close()
    return out


async def main_async(args) -> int:
    from ptxls.gputest.supervisor import shared_supervisor

    global LOGS
    LOGS = Path(args.out) / "logs"
    failures = 0
    results: dict = {"planted": [], "library": [], "timing": {}, "wheel": None}
    say("# compute-sanitizer on the H200")
    from ptxls.toolchain.sanitizer import candidates, find_sanitizer

    say(f"sanitizer: {find_sanitizer().describe()}; candidates: {candidates()}")
    say("\n# planted kernels")
    for file, kernel, tools, expect in PLANTED_RUNS:
        d = await one(file, kernel, tools, {})
        results["planted"].append(d)
        save_logs(d)
        want = marked_lines(PLANTED / file, kernel)["lines"] if expect else None
        good = show(d, expect, want)
        if expect is None:
            # nothing from the tool (the racy kernel may still fail its numbers under synccheck)
            good = (
                d["runs"]
                and not any(r["findings"] for r in d["runs"])
                and all(r.get("error_summary") == 0 or r["tool"] == "racecheck" for r in d["runs"])
            )
            say(f"  => expected no {'/'.join(tools)} finding: {'OK' if good else 'FOUND'}")
        failures += not good
    say("\n# library kernels under memcheck + racecheck")
    sem = asyncio.Semaphore(args.jobs)

    async def lib(path: Path) -> dict:
        async with sem:
            d = await one(str(path), path.parent.name, ("memcheck", "racecheck"), {})
        save_logs(d, "library-")
        print(f"library {d['kernel']}: {d['status']} ({d['wall_s']} s)", flush=True)
        return d

    kernels = sorted((ROOT / "fewshot" / "kernels").glob("*/kernel.ptx"))
    for d in await asyncio.gather(*(lib(p) for p in kernels)):
        results["library"].append(d)
        good = show(d)
        failures += d["status"] != "clean"
        if d["status"] != "clean":
            say("  => NOT CLEAN")
    say("\n# how slow (same size, untimed test)")
    lib_dir = ROOT / "fewshot" / "kernels"
    for file, kernel in (("missing_barrier.ptx", "swap_warps"),
                         (str(lib_dir / "reduce_sum/kernel.ptx"), "reduce_sum"),
                         (str(lib_dir / "sgemm_128x128/kernel.ptx"), "sgemm_128x128"),
                         (str(lib_dir / "hgemm_wgmma/kernel.ptx"), "hgemm_wgmma")):  # fmt: skip
        sanitized = next((d for d in results["planted"] + results["library"]
                          if d["kernel"] == kernel), None)  # fmt: skip
        n = ((sanitized or {}).get("sizes") or [None])[0]
        if n is None:
            continue
        plain = await timing(file, kernel, n)
        results["timing"][kernel] = {"n": n, "plain": plain,
                                     "sanitized": [{"tool": r["tool"], "wall_s": r["seconds"],
                                                    "kernel_s": (((r.get("test") or {}).get("cases") or [{}])[0].get("phases") or {}).get("kernel")}
                                                   for r in sanitized["runs"]]}  # fmt: skip
        say(f"- {kernel} n={n}: " + json.dumps(results["timing"][kernel]))
    if args.wheel_sanitizer:
        say("\n# the pip wheel's compute-sanitizer")
        d = await one("missing_barrier.ptx", "swap_warps_no_barrier", ("racecheck",),
                      {"sanitizer": args.wheel_sanitizer})  # fmt: skip
        results["wheel"] = d
        save_logs(d, suffix="-wheel")
        show(d, "racecheck", marked_lines(PLANTED / "missing_barrier.ptx",
                                          "swap_warps_no_barrier")["lines"])  # fmt: skip
    await shared_supervisor().close()
    out = Path(args.out)
    (out / "sanitizer-h200.json").write_text(json.dumps(results, indent=1, default=str))
    say(f"\nfailures: {failures}")
    (out / "sanitizer-h200.txt").write_text("\n".join(lines_out) + "\n")
    return 1 if failures else 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--wheel-sanitizer", default="")
    return asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
