"""H200 checks of Triton as a source (issue 12, point 1), run by bench/triton_gpu_checks.sh:

    python3 bench/triton_gpu_checks.py --out "$OUT"

1. Triton's own PTX of examples/vec_add_triton.py and examples/softmax_triton.py (the reference
   lowering, built from the kernels' own source in a separate process) GPU-tested against the
   Triton kernels themselves, launched by Triton on torch tensors: must pass.
2. The same PTX with one instruction changed (vec_add: add -> sub) must fail: the Triton
   reference is really compared.
3. ``ptxls lower --backend triton`` and ``ptxls test`` of the written .ptx (paired with the
   Triton kernel through its provenance header) through the real CLI: must pass.
4. An LLM lowering through the scripted OpenAI-compatible endpoint (tests/scripted_llm.py),
   ``ptxls lower vec_add_triton.py --kernel add_kernel`` through the real CLI: the first reply is
   wrong (sub for add) and is caught by the GPU test against Triton, the repair passes (exit 0,
   the header names the GPU and the Triton reference).

Exit 0 when every check passes, 1 when one fails, 2 without a GPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from scripted_llm import ScriptedLLM, Step, fenced  # noqa: E402

results: list[dict] = []

# What a model might answer for add_kernel under the spec's launch (cdiv(n, 1024) blocks of 128
# threads: each thread adds 8 elements, 128 apart).
LLM_ADD = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry add_kernel(
    .param .u64 add_kernel_param_x,
    .param .u64 add_kernel_param_y,
    .param .u64 add_kernel_param_out,
    .param .u32 add_kernel_param_n
)
{
    .reg .pred  %p<2>;
    .reg .b32   %r<8>;
    .reg .f32   %f<4>;
    .reg .b64   %rd<10>;

    ld.param.u64        %rd1, [add_kernel_param_x];
    ld.param.u64        %rd2, [add_kernel_param_y];
    ld.param.u64        %rd3, [add_kernel_param_out];
    ld.param.u32        %r1, [add_kernel_param_n];
    cvta.to.global.u64  %rd1, %rd1;
    cvta.to.global.u64  %rd2, %rd2;
    cvta.to.global.u64  %rd3, %rd3;
    mov.u32             %r2, %ctaid.x;
    mov.u32             %r3, %tid.x;
    shl.b32             %r4, %r2, 10;
    add.s32             %r4, %r4, %r3;
    add.s32             %r5, %r4, 1024;
LOOP:
    setp.ge.s32         %p1, %r4, %r1;
    @%p1 bra            DONE;
    mul.wide.s32        %rd4, %r4, 4;
    add.s64             %rd5, %rd1, %rd4;
    add.s64             %rd6, %rd2, %rd4;
    add.s64             %rd7, %rd3, %rd4;
    ld.global.f32       %f1, [%rd5];
    ld.global.f32       %f2, [%rd6];
    add.f32             %f3, %f1, %f2;
    st.global.f32       [%rd7], %f3;
    add.s32             %r4, %r4, 128;
    setp.lt.s32         %p1, %r4, %r5;
    @%p1 bra            LOOP;
DONE:
    ret;
}
"""
LLM_ADD_WRONG = LLM_ADD.replace("add.f32             %f3", "sub.f32             %f3")


def check(name: str, ok: bool, detail: str = "") -> bool:
    results.append({"check": name, "ok": bool(ok), "detail": detail[-3000:]})
    print(f"[{'PASS' if ok else 'FAIL'}] {name}" + (f"\n{detail[-2500:]}" if detail else ""))
    return ok


async def reference_lowerings(out: Path, arch: str) -> None:
    from ptxls.gputest.api import format_table
    from ptxls.lowering.triton_reference import gpu_test_against_triton, lower_with_triton

    for file, kernel in (("vec_add_triton.py", "add_kernel"), ("softmax_triton.py",
                                                                "softmax_kernel")):  # fmt: skip
        text = (ROOT / "examples" / file).read_text()
        started = time.monotonic()
        low = await lower_with_triton(text, file_path=file, kernel=kernel, arch=arch)
        took = time.monotonic() - started
        if not check(f"{file}: Triton reference lowering ({took:.1f} s)", low.ok,
                     low.message + "\n" + "\n".join(low.notes)):  # fmt: skip
            continue
        (out / f"triton-h200-{kernel}.ptx").write_text(low.ptx)
        shared = int((low.metadata or {}).get("shared", 0))
        report = await gpu_test_against_triton(low.ptx, text, kernel, file, shared=shared)
        check(f"{file}: Triton's PTX GPU-tested against the Triton kernel ({report.reference})",
              report.passed, format_table(report))  # fmt: skip
        if kernel == "add_kernel":
            wrong = low.ptx.replace("add.f32", "sub.f32")
            bad = await gpu_test_against_triton(wrong, text, kernel, file, shared=shared)
            check(f"{file}: the same PTX with sub for add FAILS against Triton ({bad.status})",
                  wrong != low.ptx and not bad.passed and bad.status == "fail",
                  bad.summary[:600])  # fmt: skip


def llm_lowering() -> None:
    work = Path(tempfile.mkdtemp(prefix="ptxls-triton-"))
    (work / "vec_add_triton.py").write_text((ROOT / "examples" / "vec_add_triton.py").read_text())
    script = [Step(fenced(LLM_ADD_WRONG, "Launch grid cdiv(n,1024), 128 threads.")),
              Step(fenced(LLM_ADD, "Fixed: add, not sub."))]  # fmt: skip
    with ScriptedLLM(script) as llm:
        env = dict(os.environ, OPENAI_BASE_URL=llm.base_url, PTXLS_MODEL="scripted-model",
                   PTXLS_LLM_RETRY_BACKOFF="0.01")  # fmt: skip
        env.pop("OPENAI_API_KEY", None)
        started = time.monotonic()
        p = subprocess.run(
            [sys.executable, "-m", "ptxls.cli.main", "lower", "vec_add_triton.py", "--kernel",
             "add_kernel", "--candidates", "1", "--rounds", "2"],
            capture_output=True, text=True, env=env, cwd=work, timeout=240,
        )  # fmt: skip
        took = time.monotonic() - started
    result = work / "add_kernel.ptx"
    header = result.read_text().split(".version")[0] if result.exists() else ""
    gpu_line = next((ln for ln in header.splitlines() if ln.startswith("// gpu test:")), "")
    detail = (
        f"exit {p.returncode} in {took:.1f} s\n{p.stdout[-2000:]}\n{p.stderr[-1500:]}\n{header}"
    )
    check("LLM lowering (scripted endpoint): wrong first reply caught, repair passes vs Triton",
          p.returncode == 0 and "passed on" in gpu_line and "round 1" not in gpu_line
          and "Traceback" not in p.stderr, detail)  # fmt: skip


def cli_test_of_lowered_files() -> None:
    """``ptxls lower --backend triton`` then ``ptxls test`` of the written .ptx: the header names
    the .py, so the test runs against the Triton kernel (softmax: Triton's dynamic shared memory
    size from its compile)."""
    for file, kernel in (("vec_add_triton.py", "add_kernel"), ("softmax_triton.py",
                                                                "softmax_kernel")):  # fmt: skip
        work = Path(tempfile.mkdtemp(prefix="ptxls-triton-cli-"))
        (work / file).write_text((ROOT / "examples" / file).read_text())
        cli = [sys.executable, "-m", "ptxls.cli.main"]
        low = subprocess.run([*cli, "lower", file, "--kernel", kernel, "--backend", "triton", "-q"],
                             capture_output=True, text=True, cwd=work, timeout=120)  # fmt: skip
        started = time.monotonic()
        test = subprocess.run([*cli, "test", f"{kernel}.ptx"], capture_output=True, text=True,
                              cwd=work, timeout=200)  # fmt: skip
        took = time.monotonic() - started
        check(f"ptxls lower --backend triton, then ptxls test {kernel}.ptx: against Triton "
              f"({took:.1f} s)",
              low.returncode == 0 and test.returncode == 0 and "the Triton kernel" in test.stdout,
              f"lower exit {low.returncode}: {low.stderr[-600:]}\ntest exit {test.returncode}:\n"
              f"{test.stdout[-2500:]}{test.stderr[-800:]}")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    from ptxls.lowering.service import close_gpu_worker
    from ptxls.lowering.verify import gpu_availability

    async def device_part() -> tuple[bool, str]:
        try:
            available, why = await gpu_availability()
            print(f"GPU: {why}")
            if available:
                await reference_lowerings(out, "sm_90")
            return available, why
        finally:
            await close_gpu_worker()

    available, why = asyncio.run(device_part())
    if not available:
        check("a GPU is present", False, why)
        return 2
    llm_lowering()
    cli_test_of_lowered_files()
    (out / "triton-h200-checks.json").write_text(json.dumps(results, indent=2))
    failed = [r["check"] for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)}/{len(results)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
