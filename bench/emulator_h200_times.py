"""The H200's time for the launches of the emulator's speed table (bench/emulator_speed.py), on
the GPU machine: each one through the real harness (``device="gpu"``, timed: the median of its
timed runs, CUDA events around the launch alone), at exactly the sizes the speed table emulates,
with the spec the emulator uses (the library kernel's spec.json; examples/vec_add.ptx with the
vec_add spec, one thread per element). Also the wall time of the whole
``ptxls test examples/vec_add.ptx --device gpu`` command (cold: a new process), for the row the
issue compares with ``ptxls test --device cpu``.

    source scripts/device-env.sh && python3 bench/emulator_h200_times.py --out $OUT
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from emulator_speed import LARGE, SIDE_BY_SIDE  # noqa: E402


async def one(kernel: str, n: int, device: str) -> dict:
    from ptxls.gputest import api
    from ptxls.gputest.spec import spec_from_json

    lib = ROOT / "fewshot" / "kernels"
    name = Path(kernel).stem if kernel.endswith(".ptx") else kernel
    spec, problems = spec_from_json((lib / name / "spec.json").read_text())
    assert spec is not None, problems
    path = ROOT / kernel if kernel.endswith(".ptx") else lib / name / "kernel.ptx"
    if kernel.endswith(".ptx"):  # one thread per element, as the speed table launches it
        spec.launch.grid, spec.launch.block, spec.launch.shared = "ceil(n/256)", "256", "0"
    spec.sizes = [n]
    t0 = time.perf_counter()
    r = await api.run_gpu_test(path.read_text(), spec.kernel, spec, device=device, seed=1,
                               reference_path=str(lib / name / "reference.cu"))  # fmt: skip
    c = r.cases[0] if r.cases else None
    return {"kernel": kernel, "n": n, "status": r.status, "summary": r.summary[:200],
            "time_ms": c.time_ms if c else None, "ref_time_ms": c.ref_time_ms if c else None,
            "test_wall_s": round(time.perf_counter() - t0, 3),
            "device": (r.device or {}).get("name", "")}  # fmt: skip


def cli_wall(device: str) -> list[float]:
    """Wall seconds of ``ptxls test examples/vec_add.ptx --device D``, each a new process."""
    out = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ptxls.cli.main", "test", "--device", device,
                        str(ROOT / "examples" / "vec_add.ptx")],
                       cwd=ROOT, capture_output=True, timeout=120)  # fmt: skip
        out.append(round(time.perf_counter() - t0, 3))
    return out


async def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "emulator-speed"))
    ap.add_argument("--device", default="gpu", help="gpu (cpu: a dry run, no times)")
    args = ap.parse_args(argv)
    rows = []
    for kernel, n in SIDE_BY_SIDE + LARGE:
        rows.append(await one(kernel, n, args.device))
        print(rows[-1], flush=True)
    data = {"benchmark": "emulator-speed (H200 side)", "rows": rows,
            "ptxls_test_vec_add_wall_s": cli_wall(args.device)}  # fmt: skip
    print(data["ptxls_test_vec_add_wall_s"], flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    day = time.strftime("%Y-%m-%d", time.gmtime())
    (Path(args.out) / f"h200-{day}-times.json").write_text(json.dumps(data, indent=1) + "\n")
    from ptxls.gputest.supervisor import close_shared

    await close_shared()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
