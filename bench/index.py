"""The benchmark suite's list, index and headline figures, all from one table (BENCHMARKS).

    .venv/bin/python bench/index.py           # rewrite the generated parts (after a new result)
    .venv/bin/python bench/index.py --check   # exit 1 when one is stale (tests/test_bench_index.py)

It writes three things:
- bench/results/INDEX.md: every folder of bench/results/ (a benchmark), its runs by machine and
  date (the layout is bench/results/<benchmark>/<machine>-<YYYY-MM-DD>[-part].<ext>), the files
  of each run, the script that made them;
- the list in bench/README.md between the `benchmarks` markers;
- the README's "Measured" figures between the `measured` markers, read from the newest result
  of each benchmark that has a headline below (no figure is typed into the README by hand).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
RUN = re.compile(r"^(?:(?P<prefix>[a-z]+)-)??(?P<machine>[\w.]+?)-(?P<date>\d{4}-\d{2}-\d{2})")


@dataclass(frozen=True)
class Benchmark:
    folder: str  # under bench/results/
    command: str  # how to run it (GPU ones through the device tool, carry .whl)
    measures: str
    where: str = "cpu"  # cpu: the 2-core machine; h200: the GPU host


BENCHMARKS = [
    Benchmark("diagnostics-latency", "python bench/diagnostics_latency.py",
              "didChange → publishDiagnostics against raw ptxas on the same text, per round"),
    Benchmark("extract-scaling", "python bench/extract_scaling.py",
              "time to find the PTX in a model reply against the reply's size"),
    Benchmark("extract-split", "(one-off, no script)",
              "the reply extractor's time by stage, before it was split"),
    Benchmark("frontend-readers", "(one-off, no script)",
              "the PTX readers' time before and after the one front end"),
    Benchmark("fuzz-server", "python bench/fuzz_server.py",
              "one server process against damaged buffers and malformed messages"),
    Benchmark("rooms", "python bench/room_map.py --json; python bench/lowering_walk.py "
              "[--root CHECKOUT] --save walk-after",
              "files and lines per room, the import arrows between rooms, and the walk of the "
              "lowering path's static call graph (files, rooms, hops between rooms)"),
    Benchmark("lowering-overhead", "python bench/lowering_overhead.py",
              "the lowering loop's own time per round, the model answering at once"),
    Benchmark("lowering-request-size", "python bench/lowering_request_size.py",
              "the size of each round's request as the rounds go on"),
    Benchmark("loop-overhead", "python bench/loop_overhead.py; bash bench/loop_overhead_device.sh",
              "ptxas runs, PTX reads and time per candidate round of a lowering", "h200"),
    Benchmark("trust", "python bench/ref_bombs.py",
              "what the restricted `ref:` evaluator refuses and how fast"),
    Benchmark("emulator-coverage", "python bench/emulator_coverage.py",
              "which library and example kernels the CPU emulator runs, and its verdicts"),
    Benchmark("emulator-speed", "python bench/emulator_speed.py",
              "the CPU emulator's thread-instructions per second"),
    Benchmark("emulator-differential", "bash bench/device_emulator_differential.sh",
              "the emulator's verdicts against the GPU's on the same launches and inputs",
              "h200"),
    Benchmark("large-inputs", "python bench/large_inputs.py",
              "how long a hover waits behind a 100 MB didOpen, a 1M-line file, 3,000 "
              "didOpens; the worst wait of a request on a small document while large ones are "
              "open"),
    Benchmark("lowering-startup", "python bench/lowering_startup.py [--before REV]",
              "`ptxls lower` from start to its first request to the model, beside the floor "
              "(Python + the openai SDK alone sending one request)"),
    Benchmark("cli-startup", "python bench/cli_startup.py [--before REV]",
              "`ptxls --version` and `ptxls check` on a small file, start to exit, beside a "
              "bare `python -c pass`"),
    Benchmark("test-times", "python bench/test_times.py [fast] [full] [--part NAME]",
              "`make test-fast` and `make test` on the 2-core machine: wall and CPU seconds, "
              "the tests' counts, the load average before and after"),
    Benchmark("soak", "python bench/soak_server.py [--basic]",
              "one server under minutes of mixed traffic: hover latency, memory, every request "
              "answered, nothing left running"),
    Benchmark("eval", "python bench/eval_validation.py; bash bench/eval_h200.sh all",
              "`ptxls eval`: scripted models scored; nvcc's and Triton's PTX of the suite on the "
              "GPU; local runner vs Ray", "cpu, h200"),
    Benchmark("eval-overhead", "python bench/eval_overhead.py",
              "`ptxls eval`'s own cost per sample, and a flaky endpoint against a clean one"),
    Benchmark("gpu-tests", "bash bench/gpu_tests.sh",
              "every GPU-marked test, doctor, demo and the CLI on the H200", "h200"),
    Benchmark("gputest-latency", "python bench/gputest_latency.py (in bench/gpu_h200.sh)",
              "a GPU test's time, cold and warm worker", "h200"),
    Benchmark("gputest-profile", "bash bench/gputest_profile.sh (bench/gputest_profile.py)",
              "where one Run GPU test of vec_add spends its time, before and after", "h200"),
    Benchmark("debugger-speed", "python bench/debugger_speed.py",
              "the debugger (`ptxls debug-adapter`) from F5 to the first wrong element of a "
              "planted bug, and per step"),
    Benchmark("gputest-lsp", "python bench/gputest_lsp_latency.py (in bench/gpu_h200.sh)",
              "Run GPU test → hover through the language server; bad kernels", "h200"),
    Benchmark("library", "bash bench/library_h200.sh (then bench/library_publish.py)",
              "the library kernels against nvcc -O3 and PyTorch, the copy ceiling", "h200"),
    Benchmark("library-tuning", "bash bench/library_tuning.sh",
              "candidate kernels (bench/tuning/) measured beside the library's", "h200"),
    Benchmark("gemm", "bash bench/gemm_device.sh (bench/gemm_bench.py, gemm_report.py)",
              "the compute-heavy kernels against nvcc, PyTorch and cuBLAS; ncu", "h200"),
    Benchmark("lowering-gpu", "python bench/lowering_gpu.py",
              "lowering ending GPU-verified; the loop's overhead per round", "h200"),
    Benchmark("loop-gpu-checks", "bash bench/loop_gpu_checks.sh",
              "the lowering loop's results never overstate (checks)", "h200"),
    Benchmark("triton-gpu-checks", "bash bench/triton_gpu_checks.sh",
              "Triton's PTX tested against the Triton kernels themselves", "h200"),
    Benchmark("sanitizer", "bash bench/sanitizer_gpu_checks.sh (bench/sanitizer_h200.py)",
              "compute-sanitizer on planted and library kernels, its cost", "h200"),
    Benchmark("cli-gpu-checks", "bash bench/cli_gpu_checks.sh",
              "the CLI's output formats and exit codes with a GPU", "h200"),
    Benchmark("trust-gpu-checks", "bash bench/trust_gpu_checks.sh",
              "planted escapes in `ref:` lines run nothing, also with a GPU", "h200"),
    Benchmark("guard", "python bench/guard.py [--gpu SPEED.tgz] [--save] (GPU half: bash "
              "bench/guard_gpu.sh)",
              "issue 22's speed figures beside the last guard run and the goals: Run GPU test → "
              "hover, `ptxls bench`, the loop's round, `ptxls lower`/`--version`/`check` start, "
              "live diagnostics", "cpu, h200"),
]  # fmt: skip


def runs_of(folder: Path) -> dict[tuple[str, str], list[str]]:
    """(machine, date) → file names, for every file named <machine>-<date>[-part].<ext>."""
    runs: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(folder.iterdir()):
        m = RUN.match(path.name)
        key = (m["machine"], m["date"]) if m else ("?", "?")
        runs[key].append(path.name)
    return dict(runs)


def newest(folder: str, machine: str, suffix: str = ".json") -> tuple[str, dict] | None:
    """The newest <machine>-<date>.json (no part) of a benchmark: (its path, its data)."""
    path = RESULTS / folder
    if not path.is_dir():
        return None
    found = sorted(p for p in path.glob(f"{machine}-*{suffix}") if RUN.fullmatch(p.stem))
    return (str(found[-1].relative_to(ROOT)), json.loads(found[-1].read_text())) if found else None


# ---- headline figures: benchmark → (machine, a sentence from its newest result) ------------


def _diagnostics(d: dict) -> str:
    small, large = d["results"][0], d["results"][-1]
    return (
        f"diagnostics latency (2-core CPU machine): a {large['lines']:,}-line nvcc PTX gets its "
        f"ptxas diagnostics {100 * large['overhead_ratio_p50']:.0f} % after raw ptxas on the same "
        f"text (beyond the {large['debounce_ms']} ms debounce); a {small['lines']}-line file "
        f"{small['overhead_p50_ms']:.1f} ms after a {small['raw_ptxas_p50_ms']:.1f} ms raw ptxas run"
    )


def _library(d: dict) -> str:
    rows = {r["kernel"]: r for r in d["rows"]}
    vec = rows.get("vec_add", {})
    return (
        f"kernel library (H200, `ptxls bench`): geometric mean {d['geomean_vs_nvcc']:.2f}× the "
        f"nvcc -O3 builds over {len(rows)} kernels; vec_add {vec.get('vs_nvcc', 0):.2f}× nvcc, "
        f"{vec.get('pct_ceiling', 0):.0f} % of the measured copy ceiling"
    )


def _fuzz(d: dict) -> str:
    seeds = len(d["runs"])
    return (
        f"robustness (2-core CPU machine): one server process took {seeds} × "
        f"{d['per_seed']['damaged_buffers']:,} damaged buffers and "
        f"{d['per_seed']['malformed_messages']:,} malformed messages and answered every request"
    )


def _guard(d: dict) -> str:
    """One sentence of a guard run (bench/guard.py): each figure against its goal."""
    from guard import BY_KEY, fmt  # bench/ is the script's folder

    parts = []
    for key, value in d["figures"].items():
        f = BY_KEY.get(key)
        if f is None or value is None:
            continue
        goal = f" (goal ≤ {fmt(f.goal, f.unit)})" if f.goal is not None else ""
        parts.append(f"{f.what}: {fmt(value, f.unit)}{goal}")
    where = "H200" if d.get("sources", {}).get("machine") else "2-core CPU machine"
    load = f", load {d['load_before']}" if d.get("load_before") else ""
    return f"speed guard ({where}{load}, `bench/guard.py`): " + "; ".join(parts)


HEADLINES: dict[str, tuple[str, Callable[[dict], str]]] = {
    "diagnostics-latency": ("cpu", _diagnostics),
    "library": ("h200", _library),
    "fuzz-server": ("cpu", _fuzz),
}
# folder → (machine, sentence), for benchmarks with a headline on more than one machine. The
# guard's lines (bench/guard.py) carry the GPU test → hover and the loop's round figures.
MORE_HEADLINES: list[tuple[str, str, Callable[[dict], str]]] = [
    ("guard", "h200", _guard),
    ("guard", "cpu", _guard),
]


def measured_section() -> str:
    lines = ["Generated by `python bench/index.py` from the newest result of each benchmark:", ""]
    heads = [(f, m, s) for f, (m, s) in HEADLINES.items()] + MORE_HEADLINES
    for folder, machine, sentence in heads:
        found = newest(folder, machine)
        if found:
            path, data = found
            lines.append(f"- {sentence(data)} (`{path}`);")
    lines[-1] = lines[-1].rstrip(";") + "."
    lines += ["", "Every benchmark and its runs: [bench/results/INDEX.md](bench/results/INDEX.md)."]
    return "\n".join(lines)


def benchmark_list() -> str:
    lines = ["| benchmark (bench/results/…) | command | measures | on |", "|---|---|---|---|"]
    for b in BENCHMARKS:
        command = b.command if b.command.startswith("(") else f"`{b.command}`"
        lines.append(f"| `{b.folder}/` | {command} | {b.measures} | {b.where} |")
    return "\n".join(lines)


def index() -> str:
    known = {b.folder: b for b in BENCHMARKS}
    out = [
        "# Benchmark results",
        "",
        "Generated by `python bench/index.py` (do not edit): one section per folder, its runs by",
        "machine and date. `cpu` is the shared 2-core machine, `h200` the GPU host. What each",
        "benchmark measures and how to run it: [bench/README.md](../README.md).",
    ]
    for folder in sorted(p for p in RESULTS.iterdir() if p.is_dir()):
        b = known.get(folder.name)
        out += ["", f"## {folder.name}", ""]
        if b:
            command = b.command if b.command.startswith("(") else f"`{b.command}`"
            out.append(f"{b.measures[0].upper()}{b.measures[1:]}. {command}.")
        else:
            out.append("Not in bench/index.py's BENCHMARKS yet.")
        out += ["", "| machine | date | files |", "|---|---|---|"]
        for (machine, date), names in sorted(runs_of(folder).items()):
            files = ", ".join(f"[{n}]({folder.name}/{n})" for n in names)
            out.append(f"| {machine} | {date} | {files} |")
    return "\n".join(out) + "\n"


def replace_marked(text: str, name: str, body: str) -> str:
    start, end = f"<!-- {name}: generated by bench/index.py -->", f"<!-- /{name} -->"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"no '{start}' ... '{end}' markers")
    return pattern.sub(lambda _: f"{start}\n{body}\n{end}", text)


def outputs() -> dict[Path, str]:
    readme, bench_readme = ROOT / "README.md", ROOT / "bench" / "README.md"
    return {
        RESULTS / "INDEX.md": index(),
        bench_readme: replace_marked(bench_readme.read_text(), "benchmarks", benchmark_list()),
        readme: replace_marked(readme.read_text(), "measured", measured_section()),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a generated part is stale")
    args = ap.parse_args(argv)
    stale = []
    for path, text in outputs().items():
        if path.exists() and path.read_text() == text:
            continue
        if args.check:
            stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"stale: {', '.join(stale)}; run `python bench/index.py` and commit", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
