"""Launch each library kernel once at its benchmark size, with random inputs, so that Nsight
Compute can profile it: achieved DRAM bandwidth, occupancy, warp stall reasons — the evidence
behind a missed target. No checking here (ptxls bench and the GPU tests do that).

    ncu --clock-control none --section SpeedOfLight --section Occupancy \
        --section WarpStateStats python3 bench/library_ncu.py transpose histogram256

A tuning candidate outside the library: NAME:PTX[:SPEC] (the spec defaults to the spec.json
beside the PTX), e.g. histogram256:bench/tuning/histogram256_v32x256.ptx:bench/tuning/histogram256_v32x256.spec.json
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np

from ptxls.gputest import build, exprs
from ptxls.gputest import cuda_driver as cd
from ptxls.gputest.bench import library_kernels
from ptxls.gputest.dtypes import DTYPES
from ptxls.gputest.harness import _inputs, scalar_arg
from ptxls.gputest.launch import launch_dims, scalar_env
from ptxls.gputest.library_spec import library_resolution


def launch_once(name: str, ptx_path: Path, ctx_arch: str, spec_path: Path | None = None) -> None:
    text = ptx_path.read_text()
    res = library_resolution(text, name, spec_path or ptx_path.parent / "spec.json", explicit=True)
    spec = res.spec
    n = int(((spec.bench or {}).get("sizes") or [max(spec.sizes)])[-1])
    built = asyncio.run(build.assemble_ptx(text, ctx_arch))
    mod = cd.load_cubin(Path(built.cubin_path).read_bytes())
    fn = cd.get_function(mod, name)
    env = scalar_env(spec, n)
    grid, block, shared = launch_dims(spec, env)
    rng = np.random.default_rng(1)
    args, ptrs = [], []
    for p in spec.params:
        if p.is_pointer:
            length = max(1, exprs.evaluate_int(p.length, env))
            dt = DTYPES[p.dtype]
            ptr = cd.alloc(length * dt.itemsize)
            ptrs.append(ptr)
            if p.role in ("in", "inout"):
                cd.upload(ptr, _inputs(p, length, rng))
            else:
                cd.memset8(ptr, 0, length * dt.itemsize)
            args.append(np.array([ptr], np.uint64))
        else:
            args.append(scalar_arg(p, env[p.name]))
    cd.launch(fn, grid, block, shared, args)
    cd.synchronize()
    for ptr in ptrs:
        cd.free(ptr)
    print(f"{name} ({ptx_path}): n={n} grid={grid} block={block}", flush=True)


def main(argv: list[str]) -> int:
    ctx = cd.Context()
    arch = ctx.info()["arch"]
    lib = library_kernels()
    for arg in argv or list(lib):
        name, *paths = arg.split(":")
        if paths:
            spec = Path(paths[1]) if len(paths) > 1 else None
            launch_once(name, Path(paths[0]), arch, spec)
        else:
            launch_once(name, lib[name], arch)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
