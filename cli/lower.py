"""``ptxls lower``: the lowering engine from the terminal, the same one the code actions run.

    ptxls lower kernels.cu --kernel vec_add --backend nvcc
    ptxls lower kernels.py --kernel add_kernel --backend triton     # Triton's own PTX
    ptxls lower kernels.cu --kernel vec_add --backend llm --candidates 2 --rounds 5
    ptxls lower --describe "relu(float* x, int n): x[i] = max(x[i], 0)" -o relu.ptx
    ptxls lower kernels.cu --kernel vec_add --strategy plan --plan-only > plan.md
    ptxls lower kernels.cu --kernel vec_add --plan plan.md          # after editing the plan

Progress goes to stderr, the report to stdout; the last line says what was checked, in words.
Exit codes (never more than what was checked):

    0  the result passed the GPU test (or --compile-only was asked and ptxas accepts it;
       or the nvcc/Triton reference lowering succeeded)
    4  ptxas-clean but NOT GPU-tested (no device, no reference to test against)
    5  passed its tests on the CPU emulator (no GPU here, or --device cpu): not GPU-verified
    1  nothing passed (the best attempt is kept under .ptxls/attempts/)
    2  it could not run (no endpoint, no such file or kernel, a target ptxas rejects)

Outputs are written only inside the current folder (the workspace) or where ``-o`` says, never
through a symbolic link; for a source outside the current folder without ``-o`` the PTX is
printed instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from .grammar import ARCH_HELP

EXIT_OK, EXIT_FAILED, EXIT_CANNOT_RUN, EXIT_NOT_TESTED = 0, 1, 2, 4
EXIT_PASSED_EMULATED = 5  # passed on the CPU emulator, not on a GPU


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "lower",
        help="lower a CUDA/Triton kernel or a plain-language request to PTX (nvcc reference or the verified LLM loop)",
        description="Exit 0: GPU-tested and passed (or --compile-only / nvcc and ptxas-clean); "
        "4: ptxas-clean but not GPU-tested; 5: passed on the CPU emulator, not on a GPU; "
        "1: nothing passed; 2: cannot run.",
    )
    p.add_argument(
        "file", nargs="?", metavar="FILE", help=".cu, .py (Triton) or .ptx (optimize) file"
    )
    p.add_argument("--kernel", help="kernel name (needed when FILE has several)")
    p.add_argument(
        "--backend",
        choices=("llm", "nvcc", "triton"),
        default="llm",
        help="llm: the verified LLM loop; nvcc / triton: the compiler's own PTX (reference)",
    )
    p.add_argument(
        "-o",
        "--output",
        help="output .ptx, or - for stdout (default: <kernel>.ptx beside FILE, never clobbering "
        "a hand-edited file, only inside the current folder)",
    )
    p.add_argument(
        "--describe", metavar="TEXT", help="a plain-language request instead of a kernel in FILE"
    )
    p.add_argument(
        "--optimize",
        action="store_true",
        help="for a .ptx FILE: verify and time all candidates, keep the fastest",
    )
    p.add_argument("--arch", help=ARCH_HELP)
    p.add_argument("--candidates", type=int, help="parallel candidates (default 2)")
    p.add_argument("--rounds", type=int, help="max rounds per candidate (default 5)")
    p.add_argument(
        "--strategy", choices=("direct", "plan"), help="'plan': ask for a step plan first"
    )
    p.add_argument(
        "--plan-only",
        action="store_true",
        help="only ask for the step plan and print it (edit it, then pass it back with --plan)",
    )
    p.add_argument(
        "--plan", metavar="FILE", help="lower following this (edited) plan; implies --strategy plan"
    )
    p.add_argument(
        "--compile-only",
        action="store_true",
        help="check candidates with ptxas only, on purpose (no GPU test); exit 0 when one is clean",
    )
    p.add_argument(
        "--device",
        choices=("auto", "gpu", "cpu"),
        default="auto",
        help="where candidates are tested: the GPU, the CPU emulator, or auto (the GPU when "
        "there is one, else the emulator; the default)",
    )
    p.add_argument(
        "--fewshot",
        type=int,
        metavar="N",
        help="library kernels shown to the model as examples (0-8, 0: none; default 2, "
        "PTXLS_LLM_FEWSHOT): fewer for a small-context server",
    )
    p.add_argument(
        "--max-total-tokens",
        type=int,
        metavar="N",
        help="stop once all replies together used N tokens (PTXLS_LLM_MAX_TOTAL_TOKENS; 0: no cap)",
    )
    p.add_argument(
        "--max-cost",
        type=float,
        metavar="X",
        help="stop once the run cost X (needs PTXLS_LLM_PRICE_PROMPT/_COMPLETION per million tokens)",
    )
    p.add_argument(
        "--extra-body",
        metavar="JSON",
        help='fields added to every request, e.g. \'{"chat_template_kwargs": {"enable_thinking": false}}\' '
        "(PTXLS_LLM_EXTRA_BODY)",
    )
    p.add_argument(
        "--header", action="append", default=[], metavar="'NAME: VALUE'",
        help="an HTTP header added to every request (repeatable; values never logged; "
        "PTXLS_LLM_EXTRA_HEADERS as a JSON object)",
    )  # fmt: skip
    p.add_argument("--model", help="model name (default: PTXLS_MODEL)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL)")
    p.add_argument("--ptxas", help="ptxas to verify with")
    p.add_argument("--dry-run", action="store_true", help="print the result instead of writing it")
    p.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        help="report format on stdout (default: text)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")


def _settings(args):
    from ptxls.lowering.settings import from_config

    strategy = "plan" if (args.plan or args.plan_only) else args.strategy
    problems = []
    extra_body = None
    if getattr(args, "extra_body", None):
        try:
            extra_body = json.loads(args.extra_body)
        except json.JSONDecodeError as e:
            problems.append(f"--extra-body ignored: not JSON ({e.msg})")
    headers = {}
    for h in getattr(args, "header", []) or []:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            problems.append("--header ignored: give it as 'Name: value'")
            continue
        headers[name.strip()] = value.strip()
    config = {
        k: v
        for k, v in {
            "model": args.model,
            "baseUrl": args.base_url,
            "candidates": args.candidates,
            "rounds": args.rounds,
            "strategy": strategy,
            "arch": args.arch,
            "fewshot": getattr(args, "fewshot", None),
            "maxTotalTokens": getattr(args, "max_total_tokens", None),
            "maxCost": getattr(args, "max_cost", None),
            "extraBody": extra_body,
            "extraHeaders": headers or None,
        }.items()
        if v is not None
    }
    settings, more = from_config(config)
    return settings, problems + more


def _err(msg: str) -> None:
    print(f"ptxls lower: {msg}", file=sys.stderr)


async def _run_async(job, settings, progress, plan_only: bool):
    """The whole run inside one event loop, which also closes what it started (the GPU worker),
    so nothing outlives the loop ("Exception ignored ... Event loop is closed" on 3.12)."""
    from ptxls.lowering.plan import make_plan
    from ptxls.lowering.service import close_gpu_worker, lower

    try:
        if plan_only:
            return await make_plan(job, settings, progress=progress)
        return await lower(job, settings, progress=progress)
    finally:
        await close_gpu_worker()


def _exit_code(outcome, compile_only: bool) -> int:
    if not outcome.ok:
        return EXIT_FAILED if outcome.ran else EXIT_CANNOT_RUN
    if outcome.gpu_tested or compile_only or outcome.backend in ("nvcc", "triton"):
        return EXIT_OK
    return EXIT_PASSED_EMULATED if getattr(outcome, "emulated", False) else EXIT_NOT_TESTED


def _last_line(outcome, code: int, written: str) -> str:
    where = f" → {written}" if written else ""
    if code == EXIT_OK and outcome.backend in ("nvcc", "triton"):
        return f"{outcome.message}{where}"
    if code == EXIT_OK and outcome.gpu_tested:
        return f"PASSED the GPU test{where}: {outcome.message}"
    if code == EXIT_OK:
        return f"ptxas-clean{where} (compile-only, as asked; not GPU-tested): {outcome.message}"
    if code == EXIT_PASSED_EMULATED:
        return f"PASSED its tests on the CPU emulator{where} (emulated (CPU), not GPU-verified)"
    if code == EXIT_NOT_TESTED:
        why = outcome.not_tested_why or "no GPU test ran"
        return f"ptxas-clean but NOT GPU-tested ({why}){where}"
    if code == EXIT_FAILED:
        return f"FAILED: {outcome.message}"
    return f"could not run: {outcome.message}"


def _emit(fmt: str, outcome, code: int, written: str, last: str) -> None:
    if fmt == "json":
        loop = outcome.loop
        print(
            json.dumps(
                {
                    "status": outcome.status,
                    "exit_code": code,
                    "kernel": outcome.kernel,
                    "message": outcome.message,
                    "gpu_tested": outcome.gpu_tested,
                    "emulated": getattr(outcome, "emulated", False),
                    "not_tested_why": outcome.not_tested_why,
                    "output": written or None,
                    "attempt": str(outcome.attempt_path) if outcome.attempt_path else None,
                    "transcript": str(outcome.transcript) if outcome.transcript else None,
                    "warnings": outcome.warnings,
                    "spec": outcome.spec or None,
                    "stop_reason": loop.stop_reason if loop else None,
                    "report": outcome.report,
                    "summary": last,
                    # model, endpoint, candidates, rounds + verdicts, tokens, duration, cost
                    **getattr(outcome, "accounting", {}),
                },
                indent=2,
            )
        )
        return
    if fmt == "markdown":
        print(f"## ptxls lower: {outcome.kernel or 'request'}\n")
        if outcome.report:
            print("```text\n" + outcome.report + "\n```\n")
        for w in outcome.warnings:
            print(f"- **warning:** {w}")
        if getattr(outcome, "accounting", None):
            print(f"- spent: {_spent_line(outcome.accounting)}")
        if outcome.transcript:
            print(f"- transcript: `{outcome.transcript}`")
        if outcome.attempt_path:
            print(f"- best attempt: `{outcome.attempt_path}`")
        print(f"\n**{last}**")
        return
    if outcome.report:
        print(outcome.report)
    for w in outcome.warnings:
        print(f"warning: {w}")
    if getattr(outcome, "accounting", None):
        print(f"spent: {_spent_line(outcome.accounting)}")
    if outcome.transcript:
        print(f"transcript: {outcome.transcript}")
    if outcome.attempt_path:
        print(f"best attempt: {outcome.attempt_path}")
    print(last)


def _spent_line(accounting: dict) -> str:
    from ptxls.lowering.accounting import header_line

    return header_line(accounting)


def _write(outcome, args, workspace: Path) -> tuple[str, str]:
    """(what was written, an error) — only inside the workspace or where -o says, never
    through a symlink; a source outside the workspace without -o: printed, not written."""
    from ptxls.lowering import safe_write

    plan = outcome.output
    if args.output == "-" or args.dry_run:
        print(outcome.ptx)
        return "stdout", ""
    if plan is None:
        print(outcome.ptx)
        return (
            "stdout (the source is outside the current folder: pass -o to write a file)",
            "",
        )
    if plan.action == "refused":
        return "", plan.reason
    if plan.action == "unchanged":
        return f"{plan.path} (unchanged: {plan.reason})", ""
    root = Path(args.output).resolve().parent if args.output else workspace
    try:
        safe_write.write_text(plan.path, outcome.ptx, root=root)
    except (safe_write.UnsafeWrite, OSError) as e:
        return "", f"not written: {e}"
    return f"{plan.path} ({plan.reason})", ""


def _argument_problem(args: argparse.Namespace) -> str:
    """Why these arguments cannot run ("" when they can)."""
    if not args.file and not args.describe:
        return "give a FILE, or --describe TEXT for a plain-language request"
    if args.describe and args.backend in ("nvcc", "triton"):
        return f"--describe needs the llm backend ({args.backend} compiles a kernel in FILE)"
    if (args.plan or args.plan_only) and args.backend in ("nvcc", "triton"):
        return "--plan/--plan-only need the llm backend"
    return ""


def _no_llm(path: Path) -> str:
    """--backend llm (the default) with no endpoint: what to set, and the compiler's own PTX
    as the way to get PTX without one."""
    from ptxls.frontend.languages import CUDA, PYTHON, language_of

    without = {CUDA: "nvcc", PYTHON: "triton"}.get(language_of(str(path)) or "")
    instead = f"; without an LLM, --backend {without} gives {without}'s own PTX" if without else ""
    return (
        "no LLM endpoint is configured for --backend llm (the default): set PTXLS_MODEL and "
        "OPENAI_BASE_URL (a local server) or OPENAI_API_KEY (see ptxls doctor)" + instead
    )


def _print_plan(job, outcome) -> int:
    plan, error = outcome
    if error:
        _err(error)
        return EXIT_CANNOT_RUN
    from ptxls.lowering.job import choose_kernel
    from ptxls.lowering.plan import plan_document

    src = choose_kernel(job)
    name = "" if isinstance(src, str) else src.name
    print(plan_document(job, name, plan))
    return EXIT_OK


def _compile_errors(args: argparse.Namespace) -> int:
    """nvcc rejected the kernel's source: its errors printed as ``ptxls check`` prints them
    (FILE:LINE:COL: error: ...), then what that means; exit 1."""
    from .check import check_file, print_problems

    path = Path(args.file)
    result = asyncio.run(check_file(path, arch=args.arch, ptxas=args.ptxas, nvcc=None))
    print_problems("lower", args.file, path, result, None, sys.stdout)
    _err(f"no PTX written: nvcc found errors in {args.file}")
    return EXIT_FAILED


def _report(args: argparse.Namespace, outcome, workspace: Path) -> int:
    """Write the result (where allowed), print the report; the exit code."""
    if not outcome.ok:
        code = _exit_code(outcome, args.compile_only)
        if code == EXIT_CANNOT_RUN and args.format == "text":
            _err(outcome.message)
            return code
        if code == EXIT_FAILED and outcome.backend == "nvcc" and args.format == "text":
            return _compile_errors(args)
        _emit(args.format, outcome, code, "", _last_line(outcome, code, ""))
        return code
    written, error = _write(outcome, args, workspace)
    if error:
        _err(error)
        return EXIT_CANNOT_RUN
    code = _exit_code(outcome, args.compile_only)
    _emit(args.format, outcome, code, written, _last_line(outcome, code, written))
    return code


def _arch_in_background(args: argparse.Namespace, path: Path, text: str):
    """The target when none is given (the file's .target, the local GPU, sm_90), found in a
    thread: the GPU probe is a child process, so the imports and the settings below go on
    meanwhile (bench/lowering_startup.py)."""
    import concurrent.futures

    from ptxls.frontend.languages import PTX, language_of
    from ptxls.frontend.ptx import ptx_target
    from ptxls.toolchain.arch import choose_arch

    target = ptx_target(text) if language_of(str(path)) == PTX else None

    def arch_then_warm() -> str:
        arch = choose_arch(None, target)
        # what reading the test spec needs (numpy), loaded while the main thread imports the
        # loop: file reads and the child process's wait overlap with its work
        import ptxls.gputest.pairing  # noqa: F401

        return arch

    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ptxls-arch")
    future = pool.submit(arch_then_warm)
    pool.shutdown(wait=False)
    return future


def run(args: argparse.Namespace) -> int:
    problem = _argument_problem(args)
    if problem:
        _err(problem)
        return EXIT_CANNOT_RUN
    if args.backend == "llm":
        from ptxls.lowering.llm_client import prefetch_sdk

        # The SDK's import, and its client for these settings (endpoint, key, timeout,
        # headers: known before the arch is), overlap reading the kernel, spec and examples.
        prefetch_sdk(_settings(args)[0])
    workspace = Path.cwd()
    if args.file:
        path = Path(args.file)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            _err(f"cannot read {path}: {e.strerror or e}")
            return EXIT_CANNOT_RUN
    else:
        path, text = workspace / "request.txt", ""
    arch = None if args.arch else _arch_in_background(args, path, text)
    from ptxls.lowering.job import LowerJob
    from ptxls.lowering.plan import plan_from_document

    if arch is not None:  # the rule of every command: the file's .target, the local GPU, sm_90
        args.arch = arch.result()
    plan_text = ""
    if args.plan:
        try:
            plan_text = plan_from_document(Path(args.plan).read_text(encoding="utf-8"))
        except OSError as e:
            _err(f"cannot read the plan {args.plan}: {e.strerror or e}")
            return EXIT_CANNOT_RUN
        if not plan_text:
            _err(f"the plan {args.plan} is empty")
            return EXIT_CANNOT_RUN
    settings, problems = _settings(args)
    for p in problems:
        _err(p)
    if args.backend == "llm" and not settings.ready:
        _err(_no_llm(path))
        return EXIT_CANNOT_RUN
    output = None
    if args.output and args.output != "-":
        output = Path(args.output)
    job = LowerJob(
        source_path=path,
        text=text,
        backend=args.backend,
        kernel=args.kernel,
        describe=args.describe,
        optimize=args.optimize,
        arch=args.arch,
        output=output,
        workspace=workspace,
        ptxas_path=args.ptxas,
        compile_only=args.compile_only,
        device=getattr(args, "device", "auto"),
        plan_text=plan_text,
    )

    def progress(msg: str) -> None:
        if not args.quiet:
            print(f"  {msg}", file=sys.stderr, flush=True)

    try:
        outcome = asyncio.run(_run_async(job, settings, progress, args.plan_only))
    except KeyboardInterrupt:
        _err("cancelled")
        return 130
    if args.plan_only:
        return _print_plan(job, outcome)
    return _report(args, outcome, workspace)
