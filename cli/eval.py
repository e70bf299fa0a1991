"""``ptxls eval``: how good a model is as a PTX compiler, on the verified task suite.

    ptxls eval --list [--format json]
    ptxls eval --samples 5 --out results.json --html report.html     # the configured endpoint
    ptxls eval --tasks 'softmax*,gemv_*' --family reduction --samples 3
    ptxls eval --baseline-only                                       # nvcc's and Triton's PTX
    ptxls eval --run-dir DIR                                         # resume an interrupted run
    ptxls eval --replay DIR                                          # verdicts again, no model
    ptxls eval --compare a.json b.json --html side-by-side.html
    ptxls eval --ray local | --ray HOST:PORT                         # tests as Ray tasks

Exit status: 0 the run finished (its scores are the result); 1 a compiler baseline failed a task
(the suite or the harness is wrong, not the model); 2 cannot run (bad arguments, no endpoint,
Ray missing); 3 no GPU where --device gpu asked for one.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import json
import os
import sys
from pathlib import Path

EXIT_OK, EXIT_BASELINE_FAILED, EXIT_CANNOT_RUN, EXIT_NO_GPU = 0, 1, 2, 3


def add_parser(subparsers) -> None:
    from .output_format import add_format_argument

    p = subparsers.add_parser(
        "eval",
        help="score a model as a PTX compiler on the verified task suite (pass@k, speed vs nvcc)",
        description="Runs the lowering loop on every task of the suite (evaluation/README.md) "
        "and scores it: pass@1/pass@k, how results were verified (GPU, CPU emulator, "
        "compile-only), fast_1 and the speedup over nvcc -O3, rounds, tokens, cost, failures.",
    )
    p.add_argument("--list", action="store_true", help="list the tasks and exit")
    add_format_argument(p)
    p.add_argument(
        "--tasks", action="append", metavar="GLOBS", help="task names (globs, comma lists)"
    )
    p.add_argument("--family", action="append", metavar="NAMES", help="task families (comma lists)")
    p.add_argument(
        "--suite", metavar="DIR", help="a task folder of your own (default: the shipped suite)"
    )
    p.add_argument(
        "--samples",
        type=int,
        default=1,
        metavar="N",
        help="independent lowerings per task (default 1)",
    )
    p.add_argument(
        "--k",
        default="1,5,10",
        metavar="K,K",
        help="pass@k to report (k <= samples; default 1,5,10)",
    )
    p.add_argument(
        "--run-dir",
        metavar="DIR",
        help="where samples and transcripts go; an existing run resumes (default .ptxls/eval/<time>)",
    )
    p.add_argument("--out", metavar="FILE.json", help="also write the results here")
    p.add_argument("--html", metavar="FILE.html", help="write a self-contained HTML report")
    p.add_argument("--tasks-table", action="store_true", help="also print one line per task")
    rows = p.add_mutually_exclusive_group()
    rows.add_argument(
        "--baseline-only", action="store_true", help="only the nvcc and Triton rows (no model)"
    )
    rows.add_argument("--no-baselines", action="store_true", help="only the model's row")
    p.add_argument(
        "--device",
        choices=("auto", "gpu", "cpu", "none"),
        default="auto",
        help="where tests run: a GPU, the CPU emulator, the GPU when there is one (default), or "
        "none (compile-only: ptxas and the interface)",
    )
    p.add_argument(
        "--test-workers",
        type=int,
        metavar="N",
        help="test workers (default: one per GPU, or per core for the emulator)",
    )
    p.add_argument(
        "--concurrency",
        type=int,
        default=8,
        metavar="N",
        help="lowerings (and model requests) in flight (default 8)",
    )
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the tests as Ray tasks on this cluster ('local': start one here)",
    )
    p.add_argument(
        "--replay",
        metavar="DIR",
        help="recompute every verdict of a run from its transcripts, without a model",
    )
    p.add_argument(
        "--redo",
        metavar="CATEGORIES",
        help="run recorded failures of these categories again (e.g. endpoint-error)",
    )
    p.add_argument(
        "--compare",
        nargs="+",
        metavar="RESULTS.json",
        help="put runs side by side (with --html: as a report)",
    )
    p.add_argument(
        "--price",
        metavar="PROMPT,COMPLETION",
        help="US$ per million tokens (default: PTXLS_EVAL_PRICE, else 0)",
    )
    p.add_argument(
        "--fast-margin",
        type=float,
        default=0.02,
        help="fast_1 counts a speedup above 1 + this (default 0.02: timing noise)",
    )
    p.add_argument(
        "--racecheck",
        action="store_true",
        help="compute-sanitizer racecheck on passing candidates (GPU)",
    )
    p.add_argument(
        "--timeout", type=float, default=10.0, metavar="S", help="per test launch (default 10 s)"
    )
    p.add_argument("--arch", default="sm_90", help="sm_XX the PTX targets (default sm_90)")
    p.add_argument("--model", help="model name (default: PTXLS_MODEL)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL)")
    p.add_argument(
        "--candidates", type=int, help="candidates per lowering (default: the setting, 2)"
    )
    p.add_argument("--rounds", type=int, help="rounds per candidate (default: the setting, 5)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def _err(msg: str) -> int:
    print(f"ptxls eval: {msg}", file=sys.stderr)
    return EXIT_CANNOT_RUN


def _settings(args):
    from ptxls.lowering.settings import from_config

    config = {k: v for k, v in {"model": args.model, "baseUrl": args.base_url,
              "candidates": args.candidates, "rounds": args.rounds}.items() if v is not None}  # fmt: skip
    settings, problems = from_config(config)
    return settings, problems


def _pricing(text: str | None):
    from ptxls.evaluation.metrics import Pricing

    text = text or os.environ.get("PTXLS_EVAL_PRICE", "")
    if not text:
        return Pricing()
    parts = text.split(",")
    if len(parts) != 2:
        raise ValueError(
            f"--price takes PROMPT,COMPLETION in US$ per million tokens (got {text!r})"
        )
    return Pricing(float(parts[0]), float(parts[1]))


def _tasks(args):
    from ptxls.evaluation.suite import load_suite, select

    suite = load_suite(Path(args.suite) if args.suite else None)
    return select(suite, args.tasks, args.family)


def _list(args) -> int:
    from .output_format import chosen_format

    tasks = _tasks(args)
    if chosen_format(args) == "json":
        print(json.dumps([t.to_json() for t in tasks], indent=1))
        return EXIT_OK
    width = max((len(t.name) for t in tasks), default=4)
    for t in tasks:
        print(
            f"{t.name:<{width}}  {t.family:<16} {t.source_kind:<8} {','.join(t.dtypes()):<10} {t.description}"
        )
    print(f"{len(tasks)} tasks")
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args)
    if args.compare:
        return _compare(args)
    try:
        pricing = _pricing(args.price)
        ks = tuple(sorted({int(k) for k in args.k.split(",") if k.strip()}))
    except ValueError as e:
        return _err(str(e))
    if args.samples < 1:
        return _err("--samples must be at least 1")
    tasks = _tasks(args)
    if not tasks:
        return _err("no task matches --tasks/--family")
    broken = [f"{t.name}: {'; '.join(t.problems)}" for t in tasks if t.problems]
    if broken:
        return _err("broken task folders: " + " | ".join(broken))
    rows = (
        ("nvcc", "triton")
        if args.baseline_only
        else ("llm",)
        if args.no_baselines
        else ("llm", "nvcc", "triton")
    )
    settings, problems = _settings(args)
    for p in problems:
        print(f"ptxls eval: setting: {p}", file=sys.stderr)
    replay = Path(args.replay) if args.replay else None
    if replay is not None and not (replay / "run.json").is_file():
        return _err(f"{replay} is not an eval run directory (no run.json)")
    if "llm" in rows and replay is None and not settings.ready:
        return _err(settings.not_ready_message() + " (or --baseline-only for the compilers' rows)")
    run_dir = Path(args.run_dir) if args.run_dir else _default_run_dir(replay)
    from ptxls.evaluation.runner import EvalOptions

    opts = EvalOptions(run_dir=run_dir, tasks=tasks, samples=args.samples, rows=rows,
                       device=args.device, concurrency=args.concurrency,
                       test_workers=args.test_workers, ray_address=args.ray, arch=args.arch,
                       timeout_s=args.timeout, racecheck=args.racecheck, replay_from=replay,
                       redo=tuple(c.strip() for c in (args.redo or "").split(",") if c.strip()))  # fmt: skip
    if replay is not None:
        _replay_settings(opts, replay)
    return _execute(opts, settings, args, pricing, ks)


def _replay_settings(opts, replay: Path) -> None:
    """A replay runs the recorded run's samples (and no baselines unless asked)."""
    config = json.loads((replay / "run.json").read_text(encoding="utf-8"))
    opts.samples = int(config.get("samples", opts.samples))
    names = set(config.get("tasks", []))
    opts.tasks = [t for t in opts.tasks if t.name in names] or opts.tasks


def _default_run_dir(replay: Path | None) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(".ptxls") / "eval" / (f"replay-{stamp}" if replay else stamp)


def _execute(opts, settings, args, pricing, ks) -> int:
    from ptxls.evaluation.report_text import ProgressBar, summary_table, task_table
    from ptxls.evaluation.results import results_document, write_results
    from ptxls.evaluation.runner import NoDevice, Runner

    if opts.replay_from is not None:
        from dataclasses import replace

        config = json.loads((opts.replay_from / "run.json").read_text(encoding="utf-8"))
        recorded = config.get("settings", {})
        settings = replace(settings, seed=recorded.get("seed", settings.seed),
                           candidates=recorded.get("candidates", settings.candidates),
                           rounds=recorded.get("rounds", settings.rounds),
                           model=settings.model or recorded.get("model") or "replay",
                           base_url=settings.base_url or "http://replay.invalid/v1")  # fmt: skip
    runner = Runner(opts, settings, None if args.quiet else ProgressBar())
    if not args.quiet:
        print(f"ptxls eval: {len(opts.tasks)} tasks x {opts.samples} sample(s), rows {', '.join(opts.rows)}; "
              f"run directory {opts.run_dir}", file=sys.stderr)  # fmt: skip
    try:
        records = asyncio.run(runner.execute())
    except NoDevice as e:
        print(f"ptxls eval: no GPU: {e}", file=sys.stderr)
        return EXIT_NO_GPU
    except ImportError as e:  # Ray asked for and not installed
        return _err(str(e))
    doc = results_document(runner.run, records, runner.info, ks=ks, pricing=pricing,
                           fast_margin=args.fast_margin)  # fmt: skip
    write_results(runner.run.path / "results.json", doc)
    if args.out:
        write_results(Path(args.out), doc)
    if args.html:
        from ptxls.evaluation.report_html import html_report

        Path(args.html).write_text(html_report([(opts.run_dir.name, doc)]), encoding="utf-8")
    print(summary_table(doc["summary"], doc["info"]))
    if args.tasks_table:
        print()
        print(task_table(doc["summary"]))
    written = [str(runner.run.path / "results.json")] + [x for x in (args.out, args.html) if x]
    print(f"wrote {', '.join(written)}")
    baselines = [r for name, r in doc["summary"].items() if name != "llm"]
    failed = any(r["passed_samples"] < r["samples"] for r in baselines)
    return EXIT_BASELINE_FAILED if failed else EXIT_OK


def _compare(args) -> int:
    from ptxls.evaluation.report_text import compare_table

    runs = []
    for path in args.compare:
        try:
            runs.append((Path(path).stem, json.loads(Path(path).read_text(encoding="utf-8"))))
        except (OSError, ValueError) as e:
            return _err(f"{path}: {e}")
    print(compare_table(runs))
    if args.html:
        from ptxls.evaluation.report_html import html_report

        Path(args.html).write_text(html_report(runs), encoding="utf-8")
        print(f"wrote {args.html}")
    return EXIT_OK
