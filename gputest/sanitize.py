"""A kernel's GPU test run under compute-sanitizer, each report placed on the PTX line it names.

    result = await sanitize_ptx(ptx_text, "reduce_sum", ptx_path="k.ptx")
    for f in result.findings: print(f.line, f.text)

The test is the ordinary one (gputest/api.py: spec, inputs, reference) with three changes:

- the PTX gets ``.file``/``.loc`` directives (frontend/line_info.py) that name each instruction's
  own line, so ptxas puts line info in the cubin and compute-sanitizer's ``in k.ptx:31`` is line 31
  of the file the person sees;
- the GPU worker runs as compute-sanitizer's child, one fresh process per tool (memcheck and
  racecheck by default), in its own process group that a timeout kills whole;
- it runs ONE size (the spec's smallest that launches two blocks or more) and times nothing:
  under the sanitizer a launch ran 3-30x slower (memcheck) to 25-1400x (racecheck) on the H200
  (bench/results/sanitizer/h200-2026-12-03.txt).

Under initcheck the harness leaves output buffers unwritten (``PTXLS_HARNESS_UNWRITTEN_OUTPUTS``):
its NaN poison would otherwise count as initialised data, and a kernel that reads an output before
writing it (``y = max(y, x)`` passes with NaN poison) would go unseen.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ptxls.frontend import sanitizer_report as sr
from ptxls.frontend.line_info import add_line_info
from ptxls.toolchain.discovery import ToolNotFound
from ptxls.toolchain.sanitizer import DEFAULT_TOOLS, TOOLS, Sanitizer, find_sanitizer, read_log
from ptxls.toolchain.sanitizer import command as sanitizer_command

from .launch import launch_dims, scalar_env
from .report import ERROR, FAIL, NO_GPU, PASS, TestReport
from .spec import TestSpec
from .supervisor import Supervisor, default_command

UNWRITTEN_OUTPUTS_ENV = "PTXLS_HARNESS_UNWRITTEN_OUTPUTS"
STEP_TIMEOUT_S = 120.0  # per harness step: a sanitized launch is slow, a hung one still ends
EXIT_GRACE_S = 60.0  # compute-sanitizer writes its summary after the worker exits
KILL_GRACE_S = 10.0  # ... also after a worker that ends itself on a sticky CUDA error
NO_SANITIZER = "no-sanitizer"

__all__ = ["SanitizeOptions", "Finding", "ToolRun", "SanitizeResult", "sanitize_ptx",
           "parse_tools", "pick_size", "TOOLS", "DEFAULT_TOOLS"]  # fmt: skip


@dataclass
class SanitizeOptions:
    tools: tuple[str, ...] = DEFAULT_TOOLS
    sanitizer: str | None = None  # an explicit compute-sanitizer (--sanitizer PATH)
    sizes: list[int] | None = None  # default: pick_size()
    timeout_s: float = STEP_TIMEOUT_S
    ptxas: str | None = None
    nvcc: str | None = None  # a CUDA source's compiler (gputest/sanitize_cuda.py)
    arch: str | None = None
    seed: int | None = None
    trusted: bool = False
    spec_path: str | None = None
    on_progress: Callable[[str], None] | None = None
    probe: Supervisor | None = None  # the plain worker that says whether a GPU is here


@dataclass
class Finding:
    """One place compute-sanitizer reported (records at the same instruction grouped)."""

    tool: str
    kind: str  # frontend.sanitizer_report kinds: invalid-access, race, uninitialized-read, ...
    severity: str  # error | warning | info
    text: str  # one line for the person (hover, CLI, diagnostic)
    line: int | None = None  # 1-based line of the file the report points at (see ``file``)
    other_line: int | None = None  # a race's second line
    line_texts: list[str] = field(default_factory=list)  # the PTX of line / other_line
    count: int = 1  # records grouped here (threads, hazards)
    address: str = ""  # "0x400" or "0x0-0x3ff" (a race's shared bytes)
    raw: str = ""  # compute-sanitizer's own words for the first record
    # "" when ``line`` is a line of the file tested (the .ptx, or the .cu whose PTX ran); else
    # what it is a line of ("nvcc's PTX of vec_add.cu" when that PTX had no line info of its own)
    file: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class ToolRun:
    tool: str
    test: TestReport | None = None  # the harness's verdict under this tool
    report: sr.SanitizerReport | None = None
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    numbers: str = ""  # the GPU test's own verdict under the tool (pass, fail, ...), before
    # the findings made it a failure


@dataclass
class SanitizeResult:
    kernel: str
    status: str  # "clean" | "findings" | "no-gpu" | "no-sanitizer" | "error"
    summary: str = ""
    sanitizer: str = ""  # which compute-sanitizer ran
    sizes: list[int] = field(default_factory=list)
    runs: list[ToolRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def findings(self) -> list[Finding]:
        return [f for run in self.runs for f in run.findings]

    @property
    def clean(self) -> bool:
        return self.status == "clean"

    def to_dict(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k != "runs"}
        d["runs"] = [
            {"tool": r.tool, "seconds": r.seconds, "notes": r.notes,
             "findings": [f.to_dict() for f in r.findings],
             "test": r.test.to_dict() if r.test else None,
             "error_summary": r.report.error_summary if r.report else None,
             "log": r.report.raw if r.report else ""}
            for r in self.runs
        ]  # fmt: skip
        return d


def parse_tools(words: list[str] | None) -> tuple[str, ...]:
    """``--sanitize`` alone → memcheck + racecheck; ``--sanitize racecheck,initcheck`` → those.
    Raises ValueError naming an unknown tool."""
    picked: list[str] = []
    for word in " ".join(words or []).replace(",", " ").split():
        tool = word.strip().lower()
        if tool == "all":
            picked += [t for t in TOOLS if t not in picked]
            continue
        if tool not in TOOLS:
            raise ValueError(
                f"unknown compute-sanitizer tool '{word}' (one of: {', '.join(TOOLS)})"
            )
        if tool not in picked:
            picked.append(tool)
    return tuple(picked) or DEFAULT_TOOLS


def pick_size(spec) -> int | None:
    """The smallest of the spec's sizes that launches at least two blocks (a block boundary and
    a partial block get exercised), else its largest: one size, since every sanitized launch is
    slow. None when the sizes cannot be evaluated (the test then reports the spec's problem)."""
    try:
        sizes = sorted(set(spec.sizes))
        for n in sizes:
            grid, _, _ = launch_dims(spec, scalar_env(spec, n))
            if grid[0] * grid[1] * grid[2] >= 2:
                return n
        return sizes[-1] if sizes else None
    except Exception:  # a bad spec is the test's to report
        return None


class SanitizedSupervisor(Supervisor):
    """The GPU worker as compute-sanitizer's child: its own process group (a timeout kills the
    sanitizer and the worker together), and time at exit for the sanitizer's summary."""

    own_process_group = True

    async def close(self) -> None:
        if self.warm and self.proc is not None and self.proc.stdin is not None:  # (warm: it is)
            with contextlib.suppress(Exception):
                self.proc.stdin.write(b'{"op": "exit"}\n')
                await self.proc.stdin.drain()
                await asyncio.wait_for(self.proc.wait(), EXIT_GRACE_S)
        await self.kill()

    async def kill(self) -> None:
        """After a sticky CUDA error the worker exits by itself and compute-sanitizer then
        writes the rest of its log: give it KILL_GRACE_S before the group is killed (a hung
        kernel costs that much more)."""
        proc = self.proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(proc.wait()), KILL_GRACE_S)
        await super().kill()


@dataclass
class _Job:
    """One kernel's sanitized test: what every tool's run shares."""

    sanitizer: Sanitizer
    kernel: str
    ptx_text: str  # as the person wrote it (finding texts quote its lines)
    marked_text: str  # with the .file/.loc line info: what is assembled and run
    file_name: str  # the name the .file directive gives (reports say "in NAME:LINE")
    opts: SanitizeOptions
    ptx_path: str | None = None
    reference_cuda: str | None = None
    reference_path: str | None = None
    spec: TestSpec | None = None
    quoted: str | None = None  # the text the findings' lines are lines of (None: ptx_text)
    line_file: str = ""  # Finding.file: what those lines are lines of, when not the tested file
    barrier: str = "a barrier (bar.sync)"  # what orders a race, in the words of the source


async def sanitize_ptx(
    ptx_text: str,
    kernel: str,
    *,
    ptx_path: str | None = None,
    reference_cuda: str | None = None,
    reference_path: str | None = None,
    spec: TestSpec | None = None,
    options: SanitizeOptions | None = None,
) -> SanitizeResult:
    """Run ``kernel``'s GPU test under each of ``options.tools``. ``spec``: the test spec when
    the caller has it (the lowering loop's, from the source); else resolved as ``ptxls test``
    does. Never raises on a bad kernel: no GPU, no compute-sanitizer, a kernel that faults or
    hangs are results."""
    opts = options or SanitizeOptions()
    started = time.monotonic()
    result = SanitizeResult(kernel, "error")
    sanitizer = await preflight(opts, result)
    if sanitizer is None:
        return result
    file_name = Path(ptx_path).name if ptx_path else "kernel.ptx"
    marked = add_line_info(ptx_text, file_name)
    if marked.maps_to == "source":
        result.notes.append("the PTX carries its own .loc line info: reports name its source lines")
    job = _Job(sanitizer, kernel, ptx_text, marked.text, file_name, opts, ptx_path,
               reference_cuda, reference_path, spec)  # fmt: skip
    return await run_job(job, result, started)


async def preflight(opts: SanitizeOptions, result: SanitizeResult) -> Sanitizer | None:
    """The compute-sanitizer to use, once a GPU is known to be here; None when either is
    missing, and then ``result`` says which (status no-sanitizer or no-gpu) and why."""
    try:
        sanitizer = await asyncio.to_thread(find_sanitizer, opts.sanitizer)
    except ToolNotFound as e:
        result.status, result.summary = NO_SANITIZER, str(e)
        return None
    result.sanitizer = sanitizer.describe()
    from .api import gpu_available
    from .supervisor import shared_supervisor

    ok, why = await gpu_available(opts.probe or shared_supervisor())
    if not ok:
        result.status, result.summary = NO_GPU, why
        return None
    return sanitizer


async def run_job(job: _Job, result: SanitizeResult, started: float) -> SanitizeResult:
    """Each tool's sanitized run of ``job`` at one size, concluded into ``result``."""
    opts = job.opts
    if opts.sizes is None:
        spec = job.spec
        n = pick_size(spec if spec is not None else await asyncio.to_thread(_resolve_spec, job))
        job.opts = replace(opts, sizes=[n] if n is not None else None)
    result.sizes = list(job.opts.sizes or [])
    for tool in opts.tools:
        result.runs.append(await _run_tool(job, tool))
    _conclude(result)
    result.seconds = time.monotonic() - started
    return result


def _resolve_spec(job: _Job):
    """The spec as run_gpu_test will resolve it (--spec, a spec.json beside the file, the paired
    CUDA, the annotation), only to pick the one size to sanitize at."""
    from .spec_source import SpecSource, resolve_spec

    wanted = SpecSource("ptx", job.ptx_text, job.kernel, job.ptx_path or "",
                        reference_cuda=job.reference_cuda, reference_path=job.reference_path,
                        spec_file=job.opts.spec_path or "", spec_json_beside=True)  # fmt: skip
    return resolve_spec(wanted).spec


async def _run_tool(job: _Job, tool: str) -> ToolRun:
    from .api import run_gpu_test

    run, opts = ToolRun(tool), job.opts
    started = time.monotonic()
    log_dir = tempfile.mkdtemp(prefix=f"ptxls-sanitize-{tool}-")
    log_path = os.path.join(log_dir, "sanitizer.log")
    env = dict(os.environ)
    if tool == "initcheck":
        env[UNWRITTEN_OUTPUTS_ENV] = "1"
    program = default_command()
    sup = SanitizedSupervisor(
        sanitizer_command(job.sanitizer, tool, log_path, program, job.kernel), env=env
    )
    if opts.on_progress:
        opts.on_progress(f"compute-sanitizer --tool {tool}: {job.kernel}")
    try:
        run.test = await run_gpu_test(
            job.marked_text, job.kernel, job.spec, reference_cuda=job.reference_cuda,
            reference_path=job.reference_path, ptx_path=job.ptx_path, sizes=opts.sizes,
            timeout_s=opts.timeout_s, supervisor=sup, arch=opts.arch, ptxas=opts.ptxas,
            seed=opts.seed, time_it=False, on_progress=opts.on_progress, trusted=opts.trusted,
            device="gpu",  # compute-sanitizer watches the GPU worker
            spec_path=opts.spec_path or None,
        )  # fmt: skip
    finally:
        await sup.close()
        log = await asyncio.to_thread(read_log, log_path)
        shutil.rmtree(log_dir, ignore_errors=True)
    run.report = sr.parse_sanitizer_output(log, tool)
    quoted = job.ptx_text if job.quoted is None else job.quoted
    run.findings = findings_of(run.report, job.kernel, job.file_name, quoted,
                               where=job.line_file, barrier=job.barrier)  # fmt: skip
    run.notes += [r.message for r in run.report.tool_errors]
    if calls := api_errors(run.report):
        run.notes.append("then: " + "; ".join(calls))
    if not log.strip():
        run.notes.append(f"compute-sanitizer wrote no log ({_why_no_log(run.test)})")
    _mark(run)
    run.seconds = time.monotonic() - started
    return run


def _why_no_log(test: TestReport | None) -> str:
    if test is None:
        return "the test did not run"
    return test.summary.splitlines()[0] if test.summary else f"test status {test.status}"


def _mark(run: ToolRun) -> None:
    """Put the findings into the test's report (hover, CLI, repair prompt) and its verdict."""
    test = run.test
    if test is None:
        return
    run.numbers = test.status
    test.sanitizer += [{"tool": f.tool, "severity": f.severity, "line": f.line,
                        "other_line": f.other_line, "text": f.text} for f in run.findings]  # fmt: skip
    serious = [f for f in run.findings if f.severity in (sr.ERROR, sr.WARNING)]
    test.notes.append(
        f"compute-sanitizer --tool {run.tool}: "
        + (f"{len(serious)} problem(s)" if serious else "no problems found")
        + " (one size, untimed: kernels run far slower under the sanitizer)"
    )
    if serious and test.status in (PASS, FAIL, ERROR):
        numbers = "the numbers were right" if test.status == PASS else test.summary.split("\n")[0]
        test.status = FAIL
        test.summary = (
            f"compute-sanitizer {serious[0].text}"
            + (f" (+{len(serious) - 1} more)" if len(serious) > 1 else "")
            + f"; {numbers}"
        )


def _conclude(result: SanitizeResult) -> None:
    serious = [f for f in result.findings if f.severity in (sr.ERROR, sr.WARNING)]
    tests = [r.test for r in result.runs if r.test is not None]
    if serious:
        result.status = "findings"
        result.summary = f"{len(serious)} problem(s) found by " + ", ".join(
            sorted({f.tool for f in serious})
        )
    elif tests and all(t.status == NO_GPU for t in tests):
        result.status, result.summary = NO_GPU, tests[0].summary
    elif tests and all(
        r.report and r.report.clean and r.test is not None and r.test.status == PASS
        for r in result.runs
    ):
        result.status = "clean"
        result.summary = "no problems found by " + ", ".join(r.tool for r in result.runs)
    elif tests and all(r.report and r.report.clean for r in result.runs):
        # The sanitizer saw nothing, the GPU test itself failed under it: say both.
        result.status = "test-failed"
        bad_tool, bad_test = next(
            (r.tool, r.test) for r in result.runs if r.test is not None and r.test.status != PASS
        )
        result.summary = (f"no problems found by {', '.join(r.tool for r in result.runs)}; the GPU "
                          f"test failed under {bad_tool}: {bad_test.summary.splitlines()[0]}")  # fmt: skip
    else:
        result.status = "error"
        bad = next((r for r in result.runs if not (r.report and r.report.clean)), result.runs[0])
        why = "; ".join(bad.notes) or (bad.test.summary if bad.test else "")
        result.summary = f"{bad.tool}: the sanitized run did not finish cleanly: {why}"


# --- records → findings on PTX lines -------------------------------------------------------


def findings_of(
    report: sr.SanitizerReport,
    kernel: str,
    file_name: str,
    ptx_text: str,
    *,
    where: str = "",
    barrier: str = "a barrier (bar.sync)",
) -> list[Finding]:
    """The report's records grouped by place, each with the line(s) of ``file_name`` it names
    (``ptx_text`` is that file's text: the PTX, or the .cu whose nvcc PTX ran; ``where``: what
    the lines are lines of when that is not the file tested). A CUDA error a call returned
    after a bad access (``Program hit CUDA_ERROR_LAUNCH_FAILED``) is a consequence, not a
    place: the caller keeps it as a note (``api_errors``)."""
    lines = ptx_text.splitlines()
    records = [r for r in report.findings if r.kind != sr.API_ERROR]
    racy = [r for r in records if r.kind in (sr.RACE, sr.HAZARD)]
    others = [r for r in records if r.kind not in (sr.RACE, sr.HAZARD)]
    found = [_race_finding(g, file_name, lines, barrier) for g in _race_groups(racy, report)]
    groups = sr.group_records(others)
    if len(groups) == 1 and report.not_printed:
        groups[0].count += report.not_printed  # past --print-limit: counted, not printed
    for g in groups:
        found.append(_finding(g, file_name, lines))
    if where:
        for f in found:
            if f.line is not None or f.other_line is not None:
                f.file = where
    return found


def api_errors(report: sr.SanitizerReport) -> list[str]:
    """'cuCtxSynchronize returned CUDA_ERROR_LAUNCH_FAILED' once per call, in order."""
    seen: list[str] = []
    for r in report.records:
        if r.kind == sr.API_ERROR:
            m = re.match(r"Program hit (.+?) \(error \d+\).* to (\S+?)\.?$", r.message)
            text = f"{m.group(2)} returned {m.group(1)}" if m else r.message
            if text not in seen:
                seen.append(text)
    return seen


@dataclass
class _RaceGroup:
    """Race and hazard records between the same two instructions (either order)."""

    records: list[sr.SanitizerRecord]
    total: int = 0  # hazards in all (the summary's count when this is the only race)


def _race_groups(records: list[sr.SanitizerRecord], report: sr.SanitizerReport) -> list[_RaceGroup]:
    groups: dict[frozenset, _RaceGroup] = {}
    for r in records:
        key = frozenset((loc.offset, loc.line) for loc in r.locations[:2])
        groups.setdefault(key, _RaceGroup([])).records.append(r)
    summary_total = (report.racecheck_errors or 0) + (report.racecheck_warnings or 0)
    for g in groups.values():
        races = [r for r in g.records if r.kind == sr.RACE]
        g.total = sum(r.hazards or 1 for r in races) or len(g.records)
        if len(groups) == 1 and summary_total > g.total:
            g.total = summary_total  # --print-limit printed only the first hazards
    return list(groups.values())


def _our_line(loc: sr.Location | None, file_name: str) -> int | None:
    if loc is None or loc.line is None:
        return None
    return loc.line if Path(loc.file).name == file_name else None


def _line_text(lines: list[str], line: int | None) -> str:
    if line is None or not 1 <= line <= len(lines):
        return ""
    return lines[line - 1].split("//", 1)[0].strip()


def _where(loc: sr.Location | None, line: int | None) -> str:
    if line is not None:
        return f"line {line}"
    if loc is None:
        return "an unknown place"
    return f"{loc.file}:{loc.line}" if loc.line is not None else loc.describe()


def _threads(g: sr.RecordGroup) -> str:
    if not g.threads:
        return ""
    t = ", ".join("({},{},{})".format(*x) for x in g.threads)
    b = ", ".join("({},{},{})".format(*x) for x in g.blocks)
    return f"; thread {t}" + (f" in block {b}" if b else "")


def _finding(g: sr.RecordGroup, file_name: str, lines: list[str]) -> Finding:
    r = g.first
    loc = r.locations[0] if r.locations else None
    line = _our_line(loc, file_name)
    span = g.address_range
    address = (
        ""
        if span is None
        else f"{span[0]:#x}"
        if span[0] == span[1]
        else f"{span[0]:#x}-{span[1]:#x}"
    )
    if r.kind == sr.INVALID_ACCESS:
        what = f"invalid __{r.space}__ {r.access} of {r.size} bytes"
        if address:
            note = r.address_note.removeprefix("is ")
            what += f" at {address}" + (f" ({note})" if note else "")
    elif r.kind == sr.UNINITIALIZED:
        what = f"read of uninitialized __{r.space}__ memory ({r.size} bytes at {address or '?'})"
    else:
        what = r.message[0].lower() + r.message[1:] if r.message else r.kind
    more = f" [{g.count} reports]" if g.count > 1 else ""
    text = f"{r.tool or 'compute-sanitizer'}: {what} on {_where(loc, line)}{_threads(g)}{more}"
    return Finding(r.tool, r.kind, r.severity, text, line, None, [_line_text(lines, line)],
                   g.count, address, r.raw)  # fmt: skip


def _race_finding(g: _RaceGroup, file_name: str, lines: list[str], barrier: str) -> Finding:
    """The write side first: 'race between the write on line 42 and the read on line 47'."""
    first = g.records[0]
    sides = list(zip(first.accesses, first.locations, strict=False))[:2]
    sides.sort(key=lambda side: side[0] != "Write")
    (acc_a, a), (acc_b, b) = (sides + [("access", None), ("access", None)])[:2]
    line_a, line_b = _our_line(a, file_name), _our_line(b, file_name)
    hazards = [r for r in g.records if r.kind == sr.HAZARD]
    addrs = sorted({h.address for h in hazards if h.address is not None})
    address = (
        (f"{addrs[0]:#x}" if len(addrs) == 1 else f"{addrs[0]:#x}-{addrs[-1]:#x}") if addrs else ""
    )
    threads = [t for _, t in hazards[0].threads] if hazards else []
    text = (f"racecheck: race between the {acc_a.lower()} on {_where(a, line_a)} and the "
            f"{acc_b.lower()} on {_where(b, line_b)}")  # fmt: skip
    if address:
        text += f" (__shared__ {address}"
        if threads:
            text += ", threads " + " and ".join("({},{},{})".format(*t) for t in threads)
        if hazards[0].block is not None:
            text += " in block ({},{},{})".format(*hazards[0].block)
        text += ")"
    text += f" [{g.total} hazard{'s' if g.total != 1 else ''}]"
    if line_a != line_b:
        text += f": {barrier} between them orders the two"
    severity = sr.ERROR if any(r.severity == sr.ERROR for r in g.records) else first.severity
    return Finding("racecheck", sr.RACE, severity, text, line_a, line_b,
                   [_line_text(lines, line_a), _line_text(lines, line_b)], g.total, address,
                   first.raw)  # fmt: skip


def format_result(result: SanitizeResult) -> str:
    """Markdown that reads as text too: a headline per kernel, a line per tool (its findings,
    the GPU test's verdict under it), each finding with the PTX lines it names. The full test
    tables are in ``to_dict()`` (``--json``)."""
    head = f"**compute-sanitizer {result.kernel}: {result.summary}**"
    if not result.runs:
        return head
    where = f"n={', '.join(map(str, result.sizes))} only" if result.sizes else "the spec's sizes"
    out = [head, f"_{where}, untimed; {result.sanitizer}_", ""]
    for run in result.runs:
        test = run.test
        numbers = run.numbers or (test.status if test is not None else "")
        verdict = numbers.upper() if numbers and numbers != PASS else numbers or "—"
        if test is not None and numbers not in (PASS, NO_GPU) and not run.findings:
            verdict += f" ({test.summary.splitlines()[0][:160]})" if test.summary else ""
        found = f"{len(run.findings)} finding(s)" if run.findings else "nothing found"
        if run.tool == "initcheck" and test is not None:
            found += " (outputs left unwritten for it)"
        out.append(f"- {run.tool} ({run.seconds:.1f} s): {found}; GPU test under it: {verdict}")
        for f in run.findings:
            out.append(f"  - {f.text}" + (f" (lines of {f.file})" if f.file else ""))
            for line, text in zip((f.line, f.other_line), f.line_texts, strict=False):
                if line is not None and text:
                    out.append(f"    `{line:>4} | {text}`")
        out += [f"  - note: {n}" for n in run.notes]
    out += [f"note: {n}" for n in result.notes]
    return "\n".join(out)
