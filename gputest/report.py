"""The result of a GPU test, and the two ways it is read: a small table (hover, CLI) and a
failure text for the LLM repair loop (case, size, first wrong indices, expected vs got, how many
wrong, launch configuration)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from .spec import SpecProblem

# status values
PASS, FAIL, ERROR, NO_GPU, SPEC_ERROR, BUILD_ERROR, TIMEOUT = (
    "pass", "fail", "error", "no-gpu", "spec-error", "build-error", "timeout",
)  # fmt: skip


@dataclass
class CaseResult:
    index: int
    n: int
    seed: int
    passed: bool
    max_rel_err: float = 0.0
    time_ms: float | None = None
    ref_time_ms: float | None = None
    gbps: float | None = None
    messages: list[str] = field(default_factory=list)
    launch: dict = field(default_factory=dict)  # grid [x,y,z], block [x,y,z], shared bytes
    outputs: list[dict] = field(default_factory=list)
    suspicious: bool = False
    phases: dict = field(default_factory=dict)  # seconds per harness step (inputs, upload, ...)
    # timing details: min_ms/max_ms/runs (spread), ref_min_ms/ref_max_ms, bytes, flops,
    # torch_ms..., baseline ("ok" or why the nvcc build is wrong), flags (why no time was given)
    timing: dict = field(default_factory=dict)
    # the CPU emulator only: what it saw during the case's launches (the sanitizer's finding
    # shape: tool, kind, severity, text, line, other_line, launch) and the thread-instructions
    findings: list[dict] = field(default_factory=list)
    thread_instructions: int | None = None

    @classmethod
    def from_dict(cls, d: dict) -> CaseResult:
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)

    def launch_text(self) -> str:
        if not self.launch:
            return ""
        g, b = self.launch.get("grid", [1]), self.launch.get("block", [1])
        fmt = lambda v: ",".join(map(str, v)) if any(x != 1 for x in v[1:]) else str(v[0])  # noqa: E731
        return f"grid={fmt(g)} block={fmt(b)} shared={self.launch.get('shared', 0)}"


@dataclass
class TestReport:
    __test__ = False  # a data class, not a pytest test class

    kernel: str
    status: str
    summary: str = ""  # one line: what happened
    cases: list[CaseResult] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)  # every size asked for (cases may stop early)
    seed: int | None = None
    reference: str = ""  # what the outputs were compared with
    load_path: str = ""  # "cubin (ptxas 13.5 …)" or "driver JIT"
    jit_log: str = ""
    device: dict = field(default_factory=dict)
    copy_ceiling_gbps: float | None = None
    problems: list[SpecProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    worker_restarted: bool = False
    seconds: float = 0.0
    # compute-sanitizer's findings when the test ran under it (gputest/sanitize.py): dicts with
    # tool, severity, line, other_line (a race's second line) and text
    sanitizer: list[dict] = field(default_factory=list)
    # the CPU emulator's findings (gputest/emulated.py), one per kind/line/text, same shape
    findings: list[dict] = field(default_factory=list)
    # the emulator does not implement an instruction of the kernel (named, with its line):
    # nothing ran, which says nothing about the kernel (status "error")
    refused: str = ""

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def emulated(self) -> bool:
        """Ran on the CPU emulator: never GPU-verified, never timed."""
        return is_emulated(self.device)

    @property
    def failing_case(self) -> CaseResult | None:
        return next((c for c in self.cases if not c.passed), None)

    @property
    def timed_case(self) -> CaseResult | None:
        """The largest case that was timed: the one whose ratio and GB/s mean something."""
        timed = [c for c in self.cases if c.time_ms]
        return max(timed, key=lambda c: c.n) if timed else None

    @property
    def ratio(self) -> float | None:
        c = self.timed_case
        return c.time_ms / c.ref_time_ms if c and c.time_ms is not None and c.ref_time_ms else None

    def to_dict(self) -> dict:
        return asdict(self)


EMULATED = "emulated (CPU), not GPU-verified"
WARNINGS_DO_NOT_FAIL = "they do not change the verdict: a GPU cannot see them"


def split_findings(findings: list[dict]) -> tuple[list[dict], list[dict]]:
    """The emulator's findings as (errors, warnings): an error failed its case; a warning (a
    read of a poisoned output before the kernel wrote it, a register never written) is
    reported on its line and changes no verdict."""
    errors = [f for f in findings if f.get("severity", "error") != "warning"]
    return errors, [f for f in findings if f.get("severity", "error") == "warning"]


def is_emulated(device: dict | None) -> bool:
    return (device or {}).get("kind") == "emulator"


def _ms(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v * 1000:.1f} µs" if v < 1 else f"{v:.3f} ms"


def _err(c: CaseResult) -> str:
    if not c.outputs and not c.passed:
        return "—"
    return "0" if c.max_rel_err == 0 else f"{c.max_rel_err:.1e}"


def format_table(report: TestReport) -> str:
    """Markdown: a status line, a table per case, then time against the reference and GB/s.
    Reads well as plain text too (the CLI prints the same)."""
    lines = [headline(report)]
    if report.problems:
        lines += [f"- {p}" for p in report.problems]
    if report.cases and report.emulated:  # no time: the emulator has no clock
        lines += ["", "| n | result | max rel err |", "|---:|:---|---:|"]
        by_index = {c.index: c for c in report.cases}
        for i, n in enumerate(report.sizes or [c.n for c in report.cases]):
            c = by_index.get(i)
            result = "not run" if c is None else "pass" if c.passed else "**FAIL**"
            lines.append(f"| {n} | {result} | {'—' if c is None else _err(c)} |")
        lines.append("")
    elif report.cases:
        lines += [
            "",
            "| n | result | max rel err | time | ref time |",
            "|---:|:---|---:|---:|---:|",
        ]
        by_index = {c.index: c for c in report.cases}
        for i, n in enumerate(report.sizes or [c.n for c in report.cases]):
            c = by_index.get(i)
            if c is None:
                lines.append(f"| {n} | not run | — | — | — |")
                continue
            result = "pass" if c.passed else "**FAIL**"
            lines.append(
                f"| {c.n} | {result} | {_err(c)} | {_ms(c.time_ms)} | {_ms(c.ref_time_ms)} |"
            )
        lines.append("")
    t = report.timed_case
    # Ratio and GB/s only mean something at the largest size asked for (small sizes time the
    # launch, not the kernel); a run that stopped early has no such line.
    if t is not None and report.sizes and t.n == max(report.sizes):
        if report.ratio is not None:
            lines.append(f"time vs reference at n={t.n}: **{report.ratio:.2f}×** "
                         f"({_ms(t.time_ms)} vs {_ms(t.ref_time_ms)}; < 1 is faster)")  # fmt: skip
        if t.gbps:
            share = (f" = {100 * t.gbps / report.copy_ceiling_gbps:.0f}% of the measured copy ceiling "
                     f"({report.copy_ceiling_gbps:.0f} GB/s)") if report.copy_ceiling_gbps else ""  # fmt: skip
            lines.append(f"effective bandwidth at n={t.n}: {t.gbps:.0f} GB/s{share}")
    bad = report.failing_case
    if bad is not None:
        lines.append(f"failed case n={bad.n} (seed {bad.seed}, {bad.launch_text()}):")
        lines += [f"- {m}" for m in bad.messages]
    for c in report.cases:
        if c.suspicious and c is not bad:
            lines += [f"- n={c.n}: {m}" for m in c.messages if m.startswith("suspicious")]
        # the timing rules' findings (no time given, work skipped) and a wrong nvcc baseline
        lines += [f"- n={c.n}: flagged: {f}" for f in (c.timing or {}).get("flags", [])]
        base = (c.timing or {}).get("baseline")
        if base and base != "ok":
            lines.append(f"- n={c.n}: the nvcc build of the reference is wrong: {base}")
    if report.sanitizer:
        lines.append("compute-sanitizer found:")
        lines += [f"- {f.get('text', '')}" for f in report.sanitizer]
    errors, warnings = split_findings(report.findings)
    if errors:
        lines.append("the emulator found:")
        lines += [f"- n={f.get('n', '?')}: {f.get('text', '')}" for f in errors[:20]]
    if warnings:
        lines.append(f"emulator-only warnings ({WARNINGS_DO_NOT_FAIL}):")
        lines += [f"- n={f.get('n', '?')}: {f.get('text', '')}" for f in warnings[:20]]
    lines.append(footer(report))
    lines += [f"note: {n}" for n in report.notes]
    if report.jit_log and report.status != PASS:
        lines.append("driver JIT log:\n" + report.jit_log)
    return "\n".join(line for line in lines if line is not None).strip()


def headline(report: TestReport) -> str:
    word = {PASS: "PASS", FAIL: "FAIL", ERROR: "ERROR", NO_GPU: "NO GPU", SPEC_ERROR: "NO TEST SPEC",
            BUILD_ERROR: "BUILD FAILED", TIMEOUT: "TIMEOUT"}.get(report.status, report.status.upper())  # fmt: skip
    passed = sum(c.passed for c in report.cases)
    count = f" — {passed}/{len(report.sizes)} cases pass" if report.cases else ""
    what = f"Emulator test {report.kernel} ({EMULATED})" if report.emulated else (
        f"GPU test {report.kernel}")  # fmt: skip
    text = f"**{what}: {word}**{count}"
    if report.summary and report.status != PASS:
        text += f"\n\n{report.summary}"
    return text


def footer(report: TestReport) -> str:
    bits = []
    if report.emulated:
        bits.append(f"{report.device.get('name', 'emulator')}: {EMULATED}, no time measured")
    elif report.device:
        d = report.device
        isa = d.get("max_ptx_isa")
        jit = f", JIT PTX ISA ≤ {isa[0]}.{isa[1]}" if isa else ""
        bits.append(
            f"{d.get('name', '?')} ({d.get('arch', '?')}, driver CUDA {d.get('driver_cuda', '?')}{jit})"
        )
    if report.load_path:
        bits.append(f"loaded as {report.load_path}")
    if report.reference:
        bits.append(f"reference: {report.reference}")
    if report.seed is not None:
        bits.append(f"seed {report.seed}")
    if report.seconds:  # alone (no device, nothing ran) it says what it is
        bits.append(f"{report.seconds:.2f} s" if bits else f"took {report.seconds:.2f} s")
    if report.worker_restarted:
        bits.append("worker replaced")
    return ("_" + "; ".join(bits) + "_") if bits else ""


def failure_feedback(report: TestReport) -> str:
    """Plain text for the LLM repair prompt: what failed, specifically enough to fix it."""
    test = "Test on the CPU emulator" if report.emulated else "GPU test"
    if report.passed:
        return f"{test} of {report.kernel} passed all {len(report.cases)} cases."
    lines = [f"{test} of kernel {report.kernel} failed ({report.status})."]
    bad = report.failing_case
    if report.summary and bad is None:  # with a failing case, its messages say it all below
        lines.append(report.summary)
    lines += [str(p) for p in report.problems]
    ok = [str(c.n) for c in report.cases if c.passed]
    if bad is not None:
        lines.append(
            f"Case n={bad.n} (case {bad.index + 1} of {len(report.sizes)}, seed {bad.seed}), "
            f"launch {bad.launch_text()}:"
        )
        lines += [f"  {m}" for m in bad.messages]
        others = [c for c in report.cases if not c.passed and c is not bad]
        if others:
            lines.append("Also failing: " + ", ".join(f"n={c.n}" for c in others) + ".")
    if ok:
        lines.append("Passing sizes: " + ", ".join(ok) + ".")
    if report.sanitizer:
        lines.append("compute-sanitizer reported:")
        lines += [f"  {f.get('text', '')}" for f in report.sanitizer]
    errors, warnings = split_findings(report.findings)
    if errors:
        lines.append("The emulator saw, while running the kernel:")
        lines += [f"  {f.get('text', '')}" for f in errors[:10]]
    if warnings:
        lines.append(f"The emulator also warned ({WARNINGS_DO_NOT_FAIL}):")
        lines += [f"  {f.get('text', '')}" for f in warnings[:10]]
    if report.jit_log and report.status in (BUILD_ERROR, ERROR):
        lines.append("JIT log:\n" + report.jit_log)
    return "\n".join(lines)


_LONG_TOKEN = re.compile(r"[\w$.%]{200,}")


def short_tokens(text: str) -> str:
    """Text for the person with every absurdly long word cut (a kernel name echoed by a test
    report, ptxas or a spec message can be megabytes)."""
    return _LONG_TOKEN.sub(lambda m: m.group(0)[:60] + f"…({len(m.group(0))} chars)", str(text))
