"""The whole emulator (decode → launch → memory) against the H200, kernel for kernel: every
one-instruction probe of h200_probe.py is loaded and launched on the emulator with the same
inputs the H200 got, and the outputs are compared — bit for bit for exact instructions, within
the ISA's bound (and bit for bit on special values) for .approx ones.

A mismatch is a bug in the emulator until the ISA text says otherwise. The ones known today
are listed in KNOWN_MISMATCHES with what fixes them; that list only shrinks (a listed probe
that starts matching fails here, so the entry gets removed)."""

from __future__ import annotations

import json
from pathlib import Path

import h200_probe as P
import numpy as np
import pytest
from test_emu_sem_h200 import F32_APPROX, _ulp_distance, _within

from ptxls import emulator

DATA = Path(__file__).resolve().parents[2] / "data" / "emulator"
FACTS = json.loads((DATA / "h200_facts.json").read_text())
APPROX = np.load(DATA / "h200_approx_f32.npz")
HALF = {"ex2.approx.f16", "ex2.approx.ftz.bf16", "tanh.approx.f16", "tanh.approx.bf16"}

# probe → why the engine differs (the fix named); entries go once they match
KNOWN_MISMATCHES: dict[str, str] = {}  # every probe now matches the H200 on the engine

PROBES = {
    name: (instr, ins, out) for name, instr, ins, out, _ in P.probes(np.random.default_rng(0))
}


def _inputs(name: str) -> tuple[list[np.ndarray], np.ndarray]:
    """The probe's inputs and the H200's outputs, from the committed data."""
    if name in FACTS:
        spec = FACTS[name]
        cols = list(zip(*(r.replace(">", "").split() for r in spec["rows"]), strict=True))
        arrs = [np.array([int(x, 16) for x in col], dtype=f"u{len(col[0]) // 2}") for col in cols]
        return arrs[:-1], arrs[-1]
    if name in HALF:
        table = np.load(
            Path(P.__file__).resolve().parents[3]
            / "emulator"
            / "semantics"
            / "data"
            / "h200_half_approx.npz"
        )
        key = {"ex2.approx.f16": "ex2_f16", "ex2.approx.ftz.bf16": "ex2_bf16",
               "tanh.approx.f16": "tanh_f16", "tanh.approx.bf16": "tanh_bf16"}[name]  # fmt: skip
        return [np.arange(65536, dtype=np.uint16)], table[key]
    if f"{name}|in0" in APPROX.files:
        ins = [APPROX[f"{name}|in{k}"] for k in range(3) if f"{name}|in{k}" in APPROX.files]
        return ins, APPROX[f"{name}|out"]
    x2 = np.load(DATA / "h200_approx_x2.npz")
    return [x2[f"{name}|in0"]], x2[f"{name}|out"]


def _run_on_emulator(name: str, inputs: list[np.ndarray]) -> np.ndarray:
    instr, ins, out = PROBES[name]
    ptx = ".version 8.7\n.target sm_90\n.address_size 64\n\n" + P.kernel("probe", instr, ins, out)
    module = emulator.load(ptx)
    mem = emulator.Memory()
    n = inputs[0].size
    params = []
    for k, arr in enumerate(inputs):
        host = np.ascontiguousarray(arr.astype(P.REG[ins[k]][2]))
        addr = mem.alloc(max(host.nbytes, 1), f"x{k}")
        mem.write(addr, host.tobytes())
        params.append(addr.to_bytes(8, "little"))
    odt = np.dtype(P.REG[out][2])
    y = mem.alloc(n * odt.itemsize, "y")
    params += [y.to_bytes(8, "little"), np.uint32(n).tobytes()]
    result = emulator.launch(module, "probe", ((n + 255) // 256, 1, 1), (256, 1, 1), 0, params, mem)
    assert not result.hang and not result.findings, result.findings[:3]
    return np.frombuffer(mem.read(y, n * odt.itemsize), dtype=odt).view(f"u{odt.itemsize}")


def _check(name: str) -> None:
    inputs, want = _inputs(name)
    got = _run_on_emulator(name, inputs)
    want = want.view(f"u{want.dtype.itemsize}")
    if name in F32_APPROX:
        fn, ref_fn, kind, bound = F32_APPROX[name]
        x = inputs[0].view(np.float32)
        g, h = got.view(np.float32), want.view(np.float32)
        with np.errstate(all="ignore"):
            ref = ref_fn(x.astype(np.float64))
        normal = (
            np.isfinite(x)
            & np.isfinite(ref)
            & (np.abs(x) >= 2.0**-126)
            & (np.abs(ref) >= 2.0**-126)
        )
        if kind == "abs2pi":
            normal &= np.abs(x) <= 2 * np.pi
        assert _within(kind, bound, x[normal], g[normal], ref[normal]).all()
        special = ~np.isfinite(x) | (x == 0) | ~np.isfinite(h) | np.isnan(ref)
        same = (got == want) | (np.isnan(g) & np.isnan(h))
        assert same[special].all()
        if kind != "abs2pi":
            rest = ~normal & ~special & (h != 0)
            assert (_ulp_distance(g[rest], h[rest]) <= 2).all()
        return
    if name.startswith(("div.approx", "div.full")):  # 2 ulp (ISA) of the H200's value
        g, h = got.view(np.float32), want.view(np.float32)
        fin = np.isfinite(g) & np.isfinite(h) & (np.abs(h) >= 2.0**-126)
        assert (_ulp_distance(g[fin], h[fin]) <= 4).all()
        return
    if name.endswith((".f64",)) and "approx" in name:  # rcp/rsqrt f64 approx: 2**-20 relative
        g, h = got.view(np.float64), want.view(np.float64)
        fin = np.isfinite(h) & (h != 0)
        assert (np.abs(g[fin] / h[fin] - 1) < 2.0**-19).all()
        return
    bad = np.flatnonzero(got != want)
    detail = [
        (
            [hex(int(a.view(f"u{a.dtype.itemsize}")[i])) for a in inputs],
            hex(int(got[i])),
            hex(int(want[i])),
        )
        for i in bad[:4]
    ]
    assert bad.size == 0, f"{bad.size}/{want.size} differ (inputs, emulator, H200): {detail}"


@pytest.mark.parametrize("name", sorted(PROBES))
def test_emulator_runs_the_probe_like_the_h200(name):
    if name in KNOWN_MISMATCHES:
        with pytest.raises((AssertionError, emulator.Refused)):
            _check(name)
        pytest.xfail(KNOWN_MISMATCHES[name])
    _check(name)


def test_known_mismatch_list_names_real_probes():
    assert set(KNOWN_MISMATCHES) <= set(PROBES)
