"""H200 checks of the lowering loop's results (issue 8 and issue 9.2), through the real CLI:

    python3 bench/loop_gpu_checks.py --out "$OUT"

Each case runs ``ptxls lower examples/vec_add.cu`` in a scratch workspace against the scripted
OpenAI-compatible server on loopback (stdlib only), with the GPU test on the real device:

- a wrong kernel (sub for add) is caught by the GPU test: exit 1, the best attempt kept;
- an elided repair: with a marker ("// ... unchanged ...") it is not even a candidate; without
  one (the add silently dropped, ptxas-clean) the GPU test catches it: exit 1;
- a wrong kernel whose reply carries loosening ``@gputest`` lines (tol 1e30, one size, a ref
  that matches anything) still fails: the spec comes from the source only;
- the right kernel exits 0 and its provenance header names the GPU and the spec used;
- the ``.version`` asked for sm_90 fits this driver's JIT and sm_100 never gets 8.0;
- no run ends with a traceback or "Exception ignored".

Without a GPU it gets as far as it can and says why it stops (exit 2). Exit 1 when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from scripted_llm import GOOD_VEC_ADD, ScriptedLLM, Step, fenced  # noqa: E402

WRONG = GOOD_VEC_ADD.replace("add.f32", "sub.f32")
SILENT_ELISION = "\n".join(ln for ln in GOOD_VEC_ADD.splitlines() if "add.f32" not in ln)
MARKED_ELISION = "\n".join(
    "    // ... unchanged ..." if "add.f32" in ln else ln for ln in GOOD_VEC_ADD.splitlines()
)
LOOSENING = "// @gputest tol: 1e30\n// @gputest sizes: 1\n// @gputest ref: c = c\n" + WRONG

results: list[dict] = []


def check(name: str, ok: bool, detail: str = "") -> bool:
    results.append({"check": name, "ok": bool(ok), "detail": detail[-1500:]})
    print(f"[{'PASS' if ok else 'FAIL'}] {name}" + (f"\n       {detail[-400:]}" if detail else ""))
    return ok


def lower(script: list[Step], *args: str) -> tuple[subprocess.CompletedProcess, Path]:
    work = Path(tempfile.mkdtemp(prefix="ptxls-loop-"))
    (work / "vec_add.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    with ScriptedLLM(script) as llm:
        env = dict(
            os.environ,
            OPENAI_BASE_URL=llm.base_url,
            PTXLS_MODEL="scripted-model",
            PTXLS_LLM_RETRY_BACKOFF="0.01",
        )
        env.pop("OPENAI_API_KEY", None)
        p = subprocess.run(
            [sys.executable, "-m", "ptxls.cli.main", "lower", "vec_add.cu", "--candidates",
             "1", *args],
            capture_output=True, text=True, env=env, cwd=work, timeout=200,
        )  # fmt: skip
    return p, work


def clean(p: subprocess.CompletedProcess) -> bool:
    return not any(
        s in p.stderr for s in ("Traceback", "Exception ignored", "Event loop is closed")
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)

    from ptxls.lowering.service import close_gpu_worker
    from ptxls.lowering.target_isa import choose_target
    from ptxls.lowering.verify import gpu_availability

    async def probe():
        # one loop for every probe, and the GPU worker it starts closed before that loop ends
        # (a worker left to the garbage collector prints "Event loop is closed" on 3.12)
        try:
            return (
                await gpu_availability(),
                await choose_target("sm_90"),
                await choose_target("sm_100"),
            )
        finally:
            await close_gpu_worker()

    (available, why), t90, t100 = asyncio.run(probe())
    print(f"GPU: {why}")
    print(f".version for sm_90: {t90.isa} ({t90.why}); sm_100: {t100.isa} ({t100.why})")
    check("sm_100 is never asked for .version 8.0", t100.isa != "8.0" and not t100.problem,
          f"{t100}")  # fmt: skip
    if not available:
        check("a GPU is present", False, why)
        (out / "loop-checks.json").write_text(json.dumps(results, indent=2))
        print("stopping: no GPU, the remaining checks need the GPU test")
        return 2
    from ptxls.toolchain.gpu_probe import probe_gpu

    info = probe_gpu()
    if info.max_ptx_isa:
        limit = f"{info.max_ptx_isa[0]}.{info.max_ptx_isa[1]}"
        check(f"sm_90 .version fits this driver's JIT (<= {limit})",
              tuple(map(int, t90.isa.split("."))) <= info.max_ptx_isa, f"{t90}")  # fmt: skip

    p, work = lower([Step(fenced(WRONG))] * 3, "--rounds", "2")
    check("a wrong kernel is caught by the GPU test (exit 1)",
          p.returncode == 1 and "gpu:" in p.stdout, p.stdout + p.stderr)  # fmt: skip
    check("  ... and its best attempt is kept",
          bool(list((work / ".ptxls" / "attempts").glob("*.attempt.ptx"))), p.stdout)  # fmt: skip
    check("  ... clean exit", clean(p), p.stderr)

    p, work = lower([Step(fenced(MARKED_ELISION)), Step(fenced(SILENT_ELISION))], "--rounds", "2")
    check("an elided repair is not a candidate, a silent one is caught by the GPU test (exit 1)",
          p.returncode == 1 and "not a candidate" in p.stdout and "gpu:" in p.stdout
          and not (work / "vec_add.ptx").exists(), p.stdout + p.stderr)  # fmt: skip

    p, work = lower([Step(fenced(LOOSENING))] * 3, "--rounds", "2")
    transcript = next((work / ".ptxls" / "transcripts").glob("*.jsonl"), None)
    ignored = transcript is not None and '"ignored_gputest"' in transcript.read_text()
    check("a wrong candidate carrying loosening @gputest lines still fails (exit 1)",
          p.returncode == 1 and ignored and not (work / "vec_add.ptx").exists(),
          p.stdout + p.stderr)  # fmt: skip

    p, work = lower([Step(fenced(GOOD_VEC_ADD))])
    header = (work / "vec_add.ptx").read_text() if (work / "vec_add.ptx").exists() else ""
    gpu_line = next((ln for ln in header.splitlines() if ln.startswith("// gpu test:")), "")
    spec_line = next((ln for ln in header.splitlines() if ln.startswith("// test spec:")), "")
    check("the right kernel exits 0 with its provenance naming the GPU",
          p.returncode == 0 and "passed on" in gpu_line and info.name in gpu_line,
          f"{gpu_line}\n{p.stdout[-600:]}{p.stderr[-600:]}")  # fmt: skip
    check("  ... and the spec used is in the header",
          "c: out f32[n]" in spec_line and "1e30" not in spec_line, spec_line)  # fmt: skip
    check("  ... clean exit", clean(p), p.stderr)
    print(header.split(".version")[0])

    (out / "loop-checks.json").write_text(json.dumps(results, indent=2))
    failed = [r["check"] for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)}/{len(results)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
