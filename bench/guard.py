"""Issue 22's regression guard: every speed figure of its point 3, measured now, beside the last
committed run of this guard and beside the goal, as ratios.

    .venv/bin/python bench/guard.py                       # the CPU figures, on this machine
    .venv/bin/python bench/guard.py --gpu SPEED.tgz       # + the GPU figures of a device run
    .venv/bin/python bench/guard.py --gpu SPEED.tgz --save   # + keep them, regenerate README

The GPU figures come from ONE device call, ``bash bench/guard_gpu.sh`` through the `run` tool
(carry [".whl"]): every GPU-marked test, then "Run GPU test" → hover through the language
server (cold: new servers, new workers; warm), the same test through gputest.api, `ptxls bench`
over the whole library, and the lowering loop's own work per GPU-tested round; it leaves
``speed.tgz`` (a folder of the same files works too). The CPU figures run here: the live
diagnostics (bench/diagnostics_latency.py), `ptxls lower` to its first request
(bench/lowering_startup.py) and `ptxls --version` / `ptxls check` (bench/cli_startup.py).

``--save`` writes bench/results/guard/<machine>-<date>.json (cpu and/or h200: the figures, the
load, the files they came from) and runs bench/index.py, which writes the README's "Measured"
section from the newest of them. Ratios: now / last committed guard run (> 1: slower), and
now / goal (≤ 1: met). Exit 1 when a goal is missed or a check (tests, statuses) failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
GUARD = BENCH / "results" / "guard"


@dataclass(frozen=True)
class Figure:
    key: str
    machine: str  # cpu | h200
    what: str
    goal: float | None  # at most this (None: reported, no goal)
    issue: float | None  # the figure issue 22 measured before (its baseline)
    unit: str = "s"


FIGURES = [
    Figure("lsp_warm_s", "h200", '"Run GPU test" → hover through the language server, vec_add '
           "6 cases, warm (median)", 0.3, 0.99),
    Figure("lsp_cold_s", "h200", "the same, cold: a new server and a new worker (median of the "
           "servers after the machine's first)", 1.0, 1.84),
    Figure("lsp_cold_first_s", "h200", "the same, cold, the run's first server (on a machine "
           "just started, without tests before it, it also pays the OS's first reads of nvcc "
           "and the libraries)", None, None),
    Figure("api_warm_s", "h200", "the same test through gputest.api (no server), warm", None,
           None),
    Figure("bench_wall_s", "h200", "`ptxls bench` over the whole library, start to exit (nvcc "
           "and PyTorch baselines included)", 60.0, 164.0),
    Figure("timed_spread", "h200", "`ptxls bench`: the widest timed-launch spread (max / "
           "median) of any kernel", None, None, "×"),
    Figure("loop_round_s", "h200", "the lowering loop's own work per GPU-tested round, model "
           "excluded (the worst round's median)", 0.3, 0.8),
    Figure("lower_first_request_s", "cpu", "`ptxls lower` from start to its first request "
           "(median)", 0.5, 1.2),
    Figure("cli_version_s", "cpu", "`ptxls --version`, start to exit (median)", 0.25, None),
    Figure("cli_check_s", "cpu", "`ptxls check` on a small file, start to exit (median)", 0.25,
           None),
    Figure("instant_lints_over_debounce_ms", "cpu", "live diagnostics: the instant lints' "
           "publish beyond the debounce, p95, worst of a 49-line and a 24k-line file", 30.0,
           None, "ms"),
    Figure("ptxas_publish_over_raw", "cpu", "live diagnostics: ptxas's publish / (raw ptxas + "
           "the debounce) on the 24k-line file, p50", 1.05, 1.04, "×"),
]  # fmt: skip
BY_KEY = {f.key: f for f in FIGURES}


def run(cmd: list[str], timeout: float) -> None:
    print(f"$ {' '.join(cmd)}", file=sys.stderr, flush=True)
    subprocess.run(cmd, cwd=ROOT, timeout=timeout, check=True, stdout=subprocess.DEVNULL)


def newest(folder: Path, pattern: str) -> Path | None:
    found = sorted(folder.glob(pattern), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


# ---- the CPU figures ---------------------------------------------------------------------


def cpu_figures(tmp: Path) -> tuple[dict, dict]:
    py = sys.executable
    figures, sources = {}, {}
    diag = tmp / "diagnostics.json"
    run([py, str(BENCH / "diagnostics_latency.py"), "--rounds", "20", "--large-rounds", "8",
         "--out", str(diag)], 900)  # fmt: skip
    d = json.loads(diag.read_text())
    figures["instant_lints_over_debounce_ms"] = round(
        max(r["instant_over_debounce_p95_ms"] for r in d["results"]), 1
    )
    figures["ptxas_publish_over_raw"] = round(
        d["results"][-1]["server_over_raw_plus_debounce_p50"], 3
    )
    sources["diagnostics"] = d["results"]
    # the START helper's two scripts write bench/results/<b>/cpu-<date>-guard.json
    run([py, str(BENCH / "lowering_startup.py"), "--part", "guard"], 600)
    found = newest(BENCH / "results" / "lowering-startup", "cpu-*-guard.json")
    if found:
        lo = json.loads(found.read_text())
        figures["lower_first_request_s"] = lo["now"]["median_s"]
        sources["lowering_startup"] = str(found.relative_to(ROOT))
    run([py, str(BENCH / "cli_startup.py"), "--part", "guard"], 600)
    found = newest(BENCH / "results" / "cli-startup", "cpu-*-guard.json")
    if found:
        cl = json.loads(found.read_text())["commands"]
        figures["cli_version_s"] = cl["ptxls --version"]["median_s"]
        figures["cli_check_s"] = cl["ptxls check"]["median_s"]
        sources["cli_startup"] = str(found.relative_to(ROOT))
    return figures, sources


# ---- the GPU figures, from a device run of bench/guard_gpu.sh ----------------------------


def unpack(path: Path, tmp: Path) -> Path:
    if path.is_dir():
        return path
    where = Path(tempfile.mkdtemp(prefix="gpu-", dir=tmp))
    with tarfile.open(path) as t:
        t.extractall(where, filter="data")
    return where


def gpu_figures(folder: Path) -> tuple[dict, dict, list[str]]:
    figures: dict = {}
    sources: dict = {}
    problems: list[str] = []
    summary = (folder / "summary.txt").read_text() if (folder / "summary.txt").exists() else ""
    steps = {m[1]: (int(m[2]), float(m[3]))
             for m in re.finditer(r"^(\S+) exit (\d+) wall ([\d.]+) s", summary, re.M)}  # fmt: skip
    sources["steps"] = {k: {"exit": v[0], "wall_s": v[1]} for k, v in steps.items()}
    for name, (code, _) in steps.items():
        if code != 0:
            problems.append(f"device step {name} exited {code}")
    pytest_log = folder / "gpu-pytest.txt"
    if pytest_log.exists():
        tail = [ln for ln in pytest_log.read_text().splitlines() if re.search(r"passed|failed", ln)]
        sources["gpu_tests"] = tail[-1].strip("= ") if tail else "no summary line"
    if (folder / "lsp.json").exists():
        lsp = json.loads((folder / "lsp.json").read_text())
        colds = lsp.get("cold_runs_to_hover_s") or [lsp["cold_to_hover_s"]]
        figures["lsp_warm_s"] = lsp["warm_to_hover_median_s"]
        figures["lsp_cold_first_s"] = colds[0]
        figures["lsp_cold_s"] = lsp.get("cold_after_first_median_s") or colds[0]
        sources["lsp"] = {k: lsp[k] for k in ("cold_runs_to_hover_s", "warm_to_hover_s",
                                              "cold_status") if k in lsp}  # fmt: skip
        if lsp.get("cold_status") != "pass":
            problems.append(f"the LSP's GPU test: {lsp.get('cold_status')}")
    if (folder / "api.json").exists():
        api = json.loads((folder / "api.json").read_text())
        figures["api_warm_s"] = api["vec_add"]["warm_median"].get("total")
    if (folder / "bench.json").exists() and "bench" in steps:
        bench = json.loads((folder / "bench.json").read_text())
        figures["bench_wall_s"] = steps["bench"][1]
        rows = bench["rows"]
        spreads = [r["max_ms"] / r["time_ms"] for r in rows if r.get("max_ms") and r.get("time_ms")]
        figures["timed_spread"] = round(max(spreads), 3) if spreads else None
        sources["bench"] = {"kernels": len(rows), "geomean_vs_nvcc": bench.get("geomean_vs_nvcc"),
                            "not_passed": [r["kernel"] for r in rows
                                           if r["status"] != "pass" or r["flags"]]}  # fmt: skip
        if sources["bench"]["not_passed"]:
            problems.append(f"ptxls bench: not passed or flagged: {sources['bench']['not_passed']}")
    loop = newest(folder, "h200-*-*.json")
    if loop is not None:
        data = json.loads(loop.read_text())
        rounds = [r for sc in data.get("scenarios", {}).values() for r in sc.get("rounds", [])
                  if r.get("verify_ms_median", 0) > 0]  # fmt: skip
        if rounds:
            figures["loop_round_s"] = round(max(r["loop_own_ms_median"] for r in rounds) / 1000, 3)
            sources["loop_rounds_ms"] = [r["loop_own_ms_median"] for r in rounds]
    machine = folder / "machine.txt"
    if machine.exists():
        sources["machine"] = machine.read_text().strip().splitlines()
    return figures, sources, problems


# ---- the last committed guard run --------------------------------------------------------


def last_committed(machine: str) -> tuple[str, dict] | None:
    """The newest bench/results/guard/<machine>-<date>.json in HEAD (not the working tree)."""
    ls = subprocess.run(["git", "ls-tree", "--name-only", "HEAD", "bench/results/guard/"],
                        cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    names = sorted(
        n for n in ls.stdout.split() if re.search(rf"/{machine}-\d{{4}}-\d\d-\d\d\.json$", n)
    )
    if not names:
        return None
    show = subprocess.run(["git", "show", f"HEAD:{names[-1]}"], cwd=ROOT, capture_output=True,
                          text=True)  # fmt: skip
    return names[-1], json.loads(show.stdout)


def fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    return f"{v:.1f} ms" if unit == "ms" else f"{v:.3f}×" if unit == "×" else f"{v:.3f} s"


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a is not None and b else "—"


def table(now: dict[str, dict]) -> tuple[str, list[str]]:
    missed = []
    lines = ["| figure | machine | now | last guard run | now / last | goal | now / goal | "
             "issue 22 measured | now / issue |", "|---|---|--:|--:|--:|--:|--:|--:|--:|"]  # fmt: skip
    lasts = {m: last_committed(m) for m in now}
    for f in FIGURES:
        if f.machine not in now or f.key not in now[f.machine]["figures"]:
            continue
        v = now[f.machine]["figures"][f.key]
        last = lasts.get(f.machine)
        lv = last[1]["figures"].get(f.key) if last else None
        if f.goal is not None and v is not None and v > f.goal:
            missed.append(f"{f.key} {fmt(v, f.unit)} > goal {fmt(f.goal, f.unit)}")
        lines.append(f"| {f.what} | {f.machine} | {fmt(v, f.unit)} | {fmt(lv, f.unit)} | "
                     f"{ratio(v, lv)} | {fmt(f.goal, f.unit)} | {ratio(v, f.goal)} | "
                     f"{fmt(f.issue, f.unit)} | {ratio(v, f.issue)} |")  # fmt: skip
    for m, last in lasts.items():
        lines.append(f"\n{m}: last guard run {'`' + last[0] + '`' if last else 'none committed'}")
    return "\n".join(lines), missed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", type=Path, action="append", default=[],
                    help="a device run of bench/guard_gpu.sh (speed.tgz or its folder); given "
                    "twice, the first fills in the figures the second lacks")  # fmt: skip
    ap.add_argument("--no-cpu", action="store_true", help="only the GPU figures")
    ap.add_argument("--save", action="store_true", help="write bench/results/guard/ and README")
    a = ap.parse_args()
    now: dict[str, dict] = {}
    problems: list[str] = []
    date = datetime.now(UTC).date().isoformat()
    with tempfile.TemporaryDirectory(prefix="ptxls-guard-") as t:
        tmp = Path(t)
        if not a.no_cpu:
            load = " ".join(f"{x:.2f}" for x in os.getloadavg())
            figures, sources = cpu_figures(tmp)
            now["cpu"] = {"date": date, "load_before": load, "figures": figures,
                          "sources": sources,
                          "load_after": " ".join(f"{x:.2f}" for x in os.getloadavg())}  # fmt: skip
        if a.gpu:
            figures, sources = {}, {}
            for i, path in enumerate(a.gpu):
                f, src, bad = gpu_figures(unpack(path, tmp))
                problems += bad
                figures.update(f)
                sources.update(src)
                started = (src.get("machine") or ["?"])[0].removeprefix("date: ")
                for key in f:
                    sources.setdefault("figure_from", {})[key] = f"device run {i + 1} ({started})"
            now["h200"] = {"date": date, "figures": figures, "sources": sources}
    text, missed = table(now)
    print(text)
    for m, run_ in now.items():
        if "load_before" in run_:
            print(f"{m} load average (1, 5, 15 min) before {run_['load_before']}, after "
                  f"{run_['load_after']}")  # fmt: skip
        if "gpu_tests" in run_["sources"]:
            print(f"{m} GPU-marked tests: {run_['sources']['gpu_tests']}")
    for p in problems + [f"goal missed: {m}" for m in missed]:
        print(f"- {p}")
    if a.save:
        GUARD.mkdir(parents=True, exist_ok=True)
        for m, run_ in now.items():
            out = GUARD / f"{m}-{date}.json"
            out.write_text(json.dumps({"goals": {f.key: f.goal for f in FIGURES
                                                 if f.machine == m},
                                       **run_}, indent=2) + "\n")  # fmt: skip
            print(f"wrote {out.relative_to(ROOT)}")
        subprocess.run([sys.executable, str(BENCH / "index.py")], cwd=ROOT, check=True)
    return 1 if problems or missed else 0


if __name__ == "__main__":
    sys.exit(main())
