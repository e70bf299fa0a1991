"""Runs a library kernel (fewshot/kernels/NAME) on the emulator at one size, with inputs from a
seeded RNG, and compares with the spec's numpy reference (gputest/numpy_ref.py evaluates it).
Shared by tests/emulator/test_library_on_emulator.py and bench/emulator_speed.py."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ptxls import emulator
from ptxls.gputest import exprs, numpy_ref

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "fewshot" / "kernels"

DTYPES = {"f32": np.float32, "f16": np.float16, "u8": np.uint8, "u32": np.uint32, "i32": np.int32,
          "u64": np.uint64, "f64": np.float64, "i64": np.int64}  # fmt: skip


@dataclass
class Run:
    kernel: str
    n: int
    ok: bool
    detail: str
    result: emulator.LaunchResult | None
    seconds: float
    cpu_seconds: float = 0.0  # this process's CPU time in the launch (the machine is shared)


def spec_of(name: str) -> dict:
    return json.loads((LIBRARY / name / "spec.json").read_text())


def _inputs(p: dict, length: int, rng: np.random.Generator) -> np.ndarray:
    dt = DTYPES[p["dtype"]]
    if np.dtype(dt).kind == "f":
        return rng.standard_normal(length).astype(dt)
    hi = 256 if dt == np.uint8 else 1000
    return rng.integers(0, hi, length).astype(dt)


def run_kernel(name: str, n: int, seed: int = 0, ptx: str | None = None,
               budget: emulator.Budget | None = None, launch: dict | None = None) -> Run:  # fmt: skip
    spec = spec_of(name)
    text = ptx if ptx is not None else (LIBRARY / name / "kernel.ptx").read_text()
    module = emulator.load(text)
    env: dict = {"n": n}
    for p in spec["params"]:
        if p["role"] == "scalar":
            env[p["name"]] = exprs.evaluate_int(p["value"], env)
        elif p["role"] == "size":
            env[p["name"]] = n
    rng = np.random.default_rng(seed)
    mem = emulator.Memory()
    arrays, ptrs, params = {}, {}, []
    for p in spec["params"]:
        if p["role"] in ("size", "scalar"):
            dt = DTYPES[p["dtype"]]
            params.append(np.asarray(env[p["name"]], dtype=dt).tobytes())
            continue
        length = exprs.evaluate_int(p["length"], env)
        dt = DTYPES[p["dtype"]]
        if p["role"] == "in":
            a = _inputs(p, length, rng)
        elif p["role"] == "out":
            a = np.full(length * np.dtype(dt).itemsize, 0xFF, np.uint8).view(dt)  # poisoned
        else:
            a = np.zeros(length, dt)
        addr = mem.alloc(a.nbytes, p["name"])
        mem.write(addr, a.tobytes())
        if p["role"] == "out":  # poisoned, and a read of it before a write is a finding
            mem.mark_unwritten(addr, a.nbytes)
        arrays[p["name"]], ptrs[p["name"]] = a, addr
        params.append(int(addr).to_bytes(8, "little"))
    launch = launch or spec["launch"]  # another PTX of the same kernel may launch differently
    grid = [max(1, exprs.evaluate_int(x, env)) for x in exprs.split_dims(str(launch["grid"]))]
    block = [exprs.evaluate_int(x, env) for x in exprs.split_dims(str(launch["block"]))]
    shared = exprs.evaluate_int(str(launch.get("shared", "0")), env)
    t0, c0 = time.perf_counter(), time.process_time()
    res = emulator.launch(
        module, entry_name(module, spec["kernel"]), grid, block, shared, params, mem, budget
    )
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    if res.hang:
        return Run(name, n, False, f"hang: {res.hang_where}", res, secs, cpu)
    names = {k: v.astype(np.float64) for k, v in arrays.items() if _role(spec, k) == "in"}
    names.update({k: v for k, v in env.items()})
    ref = numpy_ref.run(spec["numpy_ref"], names)
    tol = spec.get("tol") or 0.0
    problems = []
    for p in spec["params"]:
        if p["role"] != "out":
            continue
        a = arrays[p["name"]]
        got = np.frombuffer(mem.read(ptrs[p["name"]], a.nbytes), a.dtype).astype(np.float64)
        # the reference in the output's type, as the harness compares
        want = np.asarray(ref[p["name"]]).reshape(-1).astype(a.dtype).astype(np.float64)
        if got.shape != want.shape:
            problems.append(f"{p['name']}: shape {got.shape} vs {want.shape}")
            continue
        err = np.abs(got - want)
        bad = ~(err <= tol * np.maximum(1.0, np.abs(want)))
        if bad.any():
            i = int(np.argmax(bad))
            problems.append(
                f"{p['name']}[{i}] = {got[i]!r}, expected {want[i]!r} ({int(bad.sum())} wrong)"
            )
    for p in spec["params"]:  # inputs unchanged
        if p["role"] == "in":
            a = arrays[p["name"]]
            if mem.read(ptrs[p["name"]], a.nbytes) != a.tobytes():
                problems.append(f"input {p['name']} was changed")
    ok = not problems
    return Run(name, n, ok, "; ".join(problems) or "ok", res, secs, cpu)


def entry_name(module: emulator.EmuModule, kernel: str) -> str:
    """The spec's kernel in the module: its own name, or nvcc's mangled one (_Z7vec_add…)."""
    if kernel in module.kernels:
        return kernel
    mangled = [k for k in module.kernels if f"{len(kernel)}{kernel}" in k]
    return mangled[0] if len(mangled) == 1 else kernel


def _role(spec: dict, name: str) -> str:
    return next(p["role"] for p in spec["params"] if p["name"] == name)
