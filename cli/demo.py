"""``ptxls demo``: the main job on the shipped examples, as a newcomer's first look.

1. diagnostics for every example (.ptx through ptxas + lints, .cu through nvcc);
2. lowering examples/vec_add.cu to PTX with the nvcc reference backend (offline);
3. a GPU test of examples/vec_add.ptx when a CUDA device is present.
A step whose device or LLM endpoint is absent says so and is skipped (the LLM lowering without
an endpoint, the GPU test without a CUDA device).
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path

from ptxls.diagnostics.engine import PtxasUnavailable
from ptxls.diagnostics.model import Severity

from .check import check_file, plural
from .grammar import say


def repo_examples() -> Path | None:
    """examples/ in the working directory, else beside the source tree (editable installs)."""
    for candidate in (Path.cwd() / "examples", Path(__file__).resolve().parent.parent / "examples"):
        if candidate.is_dir():
            return candidate
    return None


def _header(text: str, out) -> None:
    print(f"\n== {text} ==", file=out)


async def _diagnostics_step(examples: Path, out) -> bool:
    _header("1. diagnostics (ptxas / nvcc) on examples/", out)
    ok = True
    for path in sorted(examples.glob("*.ptx")) + sorted(examples.glob("*.cu")):
        try:
            result = await check_file(path, arch=None, ptxas=None, nvcc=None)
        except PtxasUnavailable as e:
            print(f"ptxls demo: {e}", file=out)
            return False
        errors = sum(1 for p in result.problems if p.severity is Severity.ERROR)
        expected_broken = path.name.startswith("broken")
        others = len(result.problems) - errors
        verdict = (
            "clean"
            if not result.problems
            else plural(errors, "error")
            + (f", {plural(others, 'other problem')}" if others else "")
        )
        note = " (deliberate mistake, as expected)" if expected_broken and errors else ""
        print(f"{path.name:<20} {verdict}{note}   [{result.tool}, -arch={result.arch}]", file=out)
        for p in result.problems[:6]:
            print("    " + p.compiler_style(str(path)), file=out)
        if (errors > 0) != expected_broken:
            ok = False
    return ok


def run_demo(
    examples_dir: str | None,
    *,
    skip_gpu: bool = False,
    skip_lowering: bool = False,
    out=None,
    fmt: str = "text",
) -> int:
    """The steps' narratives as they run (text), or gathered per step (markdown: a section
    each; json: {steps: [{step, ok, output}], ok})."""
    out = out or sys.stdout
    examples = Path(examples_dir) if examples_dir else repo_examples()
    if examples is None or not examples.is_dir():
        say(
            "demo",
            "no examples/ folder here; run it from the ptxls repository or pass --examples DIR",
        )
        return 2
    from . import demo_steps

    steps = [("diagnostics", lambda o: asyncio.run(_diagnostics_step(examples, o)))]
    if not skip_lowering:
        steps.append(("lowering", lambda o: demo_steps.lowering_step(examples, o)))
    if not skip_gpu:
        steps.append(("GPU test", lambda o: demo_steps.gpu_step(examples, o)))
    done = []
    for name, step in steps:
        said = out if fmt == "text" else io.StringIO()
        done.append((name, step(said), "" if said is out else said.getvalue()))
    ok = all(passed for _, passed, _ in done)
    verdict = "all steps behaved as expected" if ok else "SOMETHING UNEXPECTED happened (see above)"
    if fmt == "json":
        steps_json = [{"step": n, "ok": passed, "output": text} for n, passed, text in done]
        print(json.dumps({"steps": steps_json, "ok": ok}, indent=2), file=out)
    elif fmt == "markdown":
        for name, passed, text in done:
            print(f"## {name}: {'as expected' if passed else 'UNEXPECTED'}\n", file=out)
            print(f"```text\n{text.strip()}\n```\n", file=out)
        print(f"**ptxls demo: {verdict}**", file=out)
    else:
        print(f"\nptxls demo: {verdict}", file=out)
    return 0 if ok else 1
