"""A lowering job and what comes back: what is asked (a kernel of a file, or a plain-language
request), which kernel of the buffer that is, and where the job's files may be written.

``service.py`` runs a job (the LLM loop, or ``compiler_backend.py`` for nvcc's and Triton's own
PTX); the CLI and the server build the ``LowerJob`` and read the ``LowerOutcome``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ptxls.frontend.languages import language_of

from . import safe_write
from .loop_records import LoopResult
from .provenance import OutputPlan
from .sources import SourceKernel, sources_in


@dataclass
class LowerJob:
    source_path: Path
    text: str
    backend: str = "llm"  # "llm", "nvcc" or "triton" (the compilers' reference lowerings)
    kernel: str | None = None  # by name ...
    line: int | None = None  # ... or the one at this 0-based line
    describe: str | None = None  # a plain-language request instead of a kernel in the file
    optimize: bool = False  # "Optimize with LLM": all candidates verified and timed, fastest kept
    arch: str | None = None
    output: Path | None = None
    workspace: Path | None = None  # transcripts go under <workspace>/.ptxls/transcripts
    ptxas_path: str | None = None
    nvcc_path: str | None = None
    compile_only: bool = False  # asked on purpose: ptxas-checked, no GPU test
    device: str = "auto"  # where candidates are tested: auto | gpu | cpu (the emulator)
    plan_text: str = ""  # a step plan the person accepted (strategy "plan")


@dataclass
class LowerOutcome:
    ok: bool
    message: str
    kernel: str = ""
    ptx: str = ""  # with the provenance header
    output: OutputPlan | None = None
    report: str = ""
    transcript: Path | None = None
    loop: LoopResult | None = None
    gpu_tested: bool = False
    notes: list[str] = field(default_factory=list)
    not_tested_why: str = ""  # when ok but not GPU-tested: why (no device, no reference, asked)
    emulated: bool = False  # passed its tests on the CPU emulator (never called GPU-tested)
    compile_only: bool = False  # the person asked for compile-only
    attempt_path: Path | None = None  # the best failing attempt, written when nothing passed
    warnings: list[str] = field(default_factory=list)
    spec: str = ""  # the test spec used, in words (recorded in the provenance header)
    ran: bool = False  # the lowering ran (False: it could not: no endpoint, no such kernel)
    inside_workspace: bool = True  # the source lies in the workspace (outputs may be written)
    backend: str = "llm"
    # model, endpoint, candidates, rounds and their verdicts, tokens, duration, cost
    # (accounting.run_summary); empty when no LLM loop ran
    accounting: dict = field(default_factory=dict)

    @property
    def status(self) -> str:
        """ "passed" (GPU-tested), "compiled" (ptxas-clean, not GPU-tested), "failed", "error"."""
        if self.ok:
            return "passed" if self.gpu_tested else "compiled"
        return "failed" if self.ran else "error"


def choose_kernel(job: LowerJob) -> SourceKernel | str:
    """The kernel (or request) the job is about, or a message saying why there is none."""
    if job.describe:
        from .sources import requests

        found = requests("// @ptx: " + job.describe.strip())
        if found:
            if job.kernel and not found[0].name:
                found[0].name = job.kernel
            return found[0]
        return "empty description"
    language = language_of(str(job.source_path))
    if language is None:
        return f"{job.source_path.name}: not a .cu, .py or .ptx file"
    found = sources_in(job.text, language)
    if job.backend == "nvcc":
        found = [k for k in found if k.kind == "cuda"]
    elif job.backend == "triton":
        found = [k for k in found if k.kind == "triton"]
    if job.line is not None:
        # the line wins, but a name given with it must agree (the buffer may have moved)
        at = [k for k in found if k.contains(job.line) and (not job.kernel or k.name == job.kernel)]
        if at:
            return at[0]
        if not job.kernel:
            return f"no kernel at line {job.line + 1} of {job.source_path.name}"
    if job.kernel:
        named = [k for k in found if k.name == job.kernel]
        if named:
            return named[0]
        names = ", ".join(k.name or "(request)" for k in found) or "none"
        return f"no kernel '{job.kernel}' in {job.source_path.name} (found: {names})"
    kernels = [k for k in found if k.kind != "request"]
    if len(kernels) == 1:
        return kernels[0]
    if not found:
        return f"no kernel in {job.source_path.name}"
    if len(found) == 1:
        return found[0]
    names = ", ".join(k.name or "(request)" for k in found)
    return f"{job.source_path.name} has several kernels ({names}): name one with --kernel"


def shown_path(path: Path, root: Path | None) -> str:
    try:
        return str(path.resolve().relative_to((root or Path.cwd()).resolve()))
    except ValueError:
        return str(path)


def workspace_of(job: LowerJob) -> tuple[Path, bool]:
    """(the folder ptxls may write this job's files in, whether the source lies inside it).
    A source outside the workspace gets its transcripts and attempts in ptxls's own cache
    folder, and no result beside it."""
    if job.workspace is not None and (
        job.describe or safe_write.is_inside(job.source_path, job.workspace)
    ):
        return Path(job.workspace), True
    cache = safe_write.user_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    return cache, False
