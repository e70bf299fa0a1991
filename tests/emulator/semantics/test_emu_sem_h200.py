"""The value functions against the H200's own results (tests/data/emulator/h200_*.{json,npz},
recorded by h200_probe.py on an NVIDIA H200, driver 580.159.04, see h200_machine.json).

Exact instructions must match bit for bit; .approx ones must stay within the ISA's stated
bound of the exact value, and within that bound of what the H200 returned."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ptxls.emulator.semantics import approx, cvt, fp, integer

DATA = Path(__file__).resolve().parents[2] / "data" / "emulator"
FACTS = json.loads((DATA / "h200_facts.json").read_text())


def _f32(x):
    return x.view(np.float32)


def _f64(x):
    return x.view(np.float64)


def _u(x):
    return x.view(f"u{x.dtype.itemsize}")


# instruction → function of the raw input arrays returning an array of the output dtype
EXACT = {
    "add.f32": lambda a, b: fp.add(_f32(a), _f32(b)),
    "sub.f32": lambda a, b: fp.sub(_f32(a), _f32(b)),
    "mul.f32": lambda a, b: fp.mul(_f32(a), _f32(b)),
    "div.rn.f32": lambda a, b: fp.div(_f32(a), _f32(b)),
    "min.f32": lambda a, b: fp.fmin(_f32(a), _f32(b)),
    "max.f32": lambda a, b: fp.fmax(_f32(a), _f32(b)),
    "min.NaN.f32": lambda a, b: fp.fmin(_f32(a), _f32(b), nan=True),
    "max.NaN.f32": lambda a, b: fp.fmax(_f32(a), _f32(b), nan=True),
    "min.ftz.f32": lambda a, b: fp.fmin(_f32(a), _f32(b), ftz=True),
    "add.sat.f32": lambda a, b: fp.add(_f32(a), _f32(b), sat=True),
    "mul.sat.f32": lambda a, b: fp.mul(_f32(a), _f32(b), sat=True),
    "add.rm.f32": lambda a, b: fp.add(_f32(a), _f32(b), rnd="rm"),
    "add.ftz.f32": lambda a, b: fp.add(_f32(a), _f32(b), ftz=True),
    "copysign.f32": lambda a, b: fp.copysign(_f32(a), _f32(b)),
    "fma.rn.f32": lambda a, b: fp.fma(_f32(a), _f32(b), _f32(b)),
    "abs.f32": lambda a: fp.fabs(_f32(a)),
    "neg.f32": lambda a: fp.fneg(_f32(a)),
    "rcp.rn.f32": lambda a: fp.rcp(_f32(a)),
    "sqrt.rn.f32": lambda a: fp.sqrt(_f32(a)),
    "add.f64": lambda a, b: fp.add(_f64(a), _f64(b)),
    "mul.f64": lambda a, b: fp.mul(_f64(a), _f64(b)),
    "div.rn.f64": lambda a, b: fp.div(_f64(a), _f64(b)),
    "min.f64": lambda a, b: fp.fmin(_f64(a), _f64(b)),
    "max.f64": lambda a, b: fp.fmax(_f64(a), _f64(b)),
    "fma.rn.f64": lambda a, b: fp.fma(_f64(a), _f64(b), _f64(b)),
    "sqrt.rn.f64": lambda a: fp.sqrt(_f64(a)),
    "cvt.rni.s32.f32": lambda a: cvt.cvt(_f32(a), "s32", "f32", "rni"),
    "cvt.rzi.u32.f32": lambda a: cvt.cvt(_f32(a), "u32", "f32", "rzi"),
    "cvt.rzi.s64.f32": lambda a: cvt.cvt(_f32(a), "s64", "f32", "rzi"),
    "cvt.rzi.u64.f32": lambda a: cvt.cvt(_f32(a), "u64", "f32", "rzi"),
    "cvt.rn.f16.f32": lambda a: cvt.cvt(_f32(a), "f16", "f32", "rn"),
    "cvt.rz.f16.f32": lambda a: cvt.cvt(_f32(a), "f16", "f32", "rz"),
    "cvt.rn.bf16.f32": lambda a: cvt.cvt(_f32(a), "bf16", "f32", "rn"),
    "cvt.rn.relu.f16.f32": lambda a: cvt.cvt(_f32(a), "f16", "f32", "rn", relu=True),
    "cvt.rn.satfinite.f16.f32": lambda a: cvt.cvt(_f32(a), "f16", "f32", "rn", satfinite=True),
    "cvt.rna.tf32.f32": lambda a: cvt.cvt(_f32(a), "tf32", "f32", "rna"),
    "cvt.rni.f32.f32": lambda a: cvt.cvt(_f32(a), "f32", "f32", "rni"),
    "cvt.sat.f32.f32": lambda a: cvt.cvt(_f32(a), "f32", "f32", sat=True),
    "cvt.ftz.f32.f32": lambda a: cvt.cvt(_f32(a), "f32", "f32", ftz=True),
    "cvt.rn.f16x2.f32": lambda a, b: cvt.cvt_pack_x2(_f32(a), _f32(b), "f16x2"),
    "cvt.rn.bf16x2.f32": lambda a, b: cvt.cvt_pack_x2(_f32(a), _f32(b), "bf16x2"),
    "cvt.rn.satfinite.e4m3x2.f32": lambda a, b: cvt.cvt_pack_x2(
        _f32(a), _f32(b), "e4m3x2", satfinite=True
    ),
    "cvt.rn.satfinite.e5m2x2.f32": lambda a, b: cvt.cvt_pack_x2(
        _f32(a), _f32(b), "e5m2x2", satfinite=True
    ),
    "div.s32": lambda a, b: integer.div(a, b, "s32"),
    "rem.s32": lambda a, b: integer.rem(a, b, "s32"),
    "div.u32": lambda a, b: integer.div(a, b, "u32"),
    "rem.u32": lambda a, b: integer.rem(a, b, "u32"),
    "div.s64": lambda a, b: integer.div(a, b, "s64"),
    "rem.s64": lambda a, b: integer.rem(a, b, "s64"),
    "div.u64": lambda a, b: integer.div(a, b, "u64"),
    "rem.u64": lambda a, b: integer.rem(a, b, "u64"),
}


def _rows(op):
    spec = FACTS[op]
    cols = list(zip(*(r.replace(">", "").split() for r in spec["rows"]), strict=True))
    ins = [np.array([int(x, 16) for x in col], dtype=f"u{len(col[0]) // 2}") for col in cols[:-1]]
    out = np.array([int(x, 16) for x in cols[-1]], dtype=f"u{len(cols[-1][0]) // 2}")
    ins = [
        a.view(np.dtype(t)) if t.startswith("int") else a
        for a, t in zip(ins, spec["in"], strict=True)
    ]
    return ins, out


def test_every_exact_probe_is_checked():
    assert set(FACTS) == set(EXACT), set(FACTS) ^ set(EXACT)


@pytest.mark.parametrize("op", sorted(EXACT))
def test_bit_identical_to_h200(op):
    ins, want = _rows(op)
    got = _u(np.ascontiguousarray(EXACT[op](*ins)))
    bad = np.flatnonzero(got != want)
    detail = [
        ([hex(int(_u(a)[i])) for a in ins], hex(int(got[i])), hex(int(want[i]))) for i in bad[:5]
    ]
    assert bad.size == 0, f"{bad.size}/{want.size} differ (inputs, emulator, H200): {detail}"


# ----------------------------------------------------------------------------- .approx

APPROX = np.load(DATA / "h200_approx_f32.npz")


def _ulp_distance(x, y):
    """Distance in f32 representable steps between two float32 arrays (same sign line)."""

    def key(v):
        b = v.view(np.uint32).astype(np.int64)
        return np.where(b & 0x80000000, -(b & 0x7FFFFFFF), b)

    return np.abs(key(x) - key(y))


F32_APPROX = {
    # op: (function, exact reference in float64, bound kind, bound) — bounds from the ISA
    "ex2.approx.f32": (lambda x: approx.ex2(x), np.exp2, "ulp", 2),
    "ex2.approx.ftz.f32": (lambda x: approx.ex2(x, ftz=True), np.exp2, "ulp", 2),
    "rcp.approx.f32": (lambda x: approx.rcp_approx(x), lambda x: 1 / x, "ulp", 1),
    "rcp.approx.ftz.f32": (lambda x: approx.rcp_approx(x, ftz=True), lambda x: 1 / x, "ulp", 1),
    "rsqrt.approx.f32": (lambda x: approx.rsqrt(x), lambda x: 1 / np.sqrt(x), "rel", 2**-22.9),
    "rsqrt.approx.ftz.f32": (
        lambda x: approx.rsqrt(x, ftz=True),
        lambda x: 1 / np.sqrt(x),
        "rel",
        2**-22.9,
    ),
    "sqrt.approx.f32": (lambda x: approx.sqrt_approx(x), np.sqrt, "rel", 2**-23),
    "sqrt.approx.ftz.f32": (lambda x: approx.sqrt_approx(x, True), np.sqrt, "rel", 2**-23),
    "lg2.approx.f32": (lambda x: approx.lg2(x), np.log2, "lg2", 2**-22),
    "lg2.approx.ftz.f32": (lambda x: approx.lg2(x, True), np.log2, "lg2", 2**-22),
    "sin.approx.f32": (lambda x: approx.sin(x), np.sin, "abs2pi", 2**-20.5),
    "sin.approx.ftz.f32": (lambda x: approx.sin(x, True), np.sin, "abs2pi", 2**-20.5),
    "cos.approx.f32": (lambda x: approx.cos(x), np.cos, "abs2pi", 2**-20.5),
    "cos.approx.ftz.f32": (lambda x: approx.cos(x, True), np.cos, "abs2pi", 2**-20.5),
    "tanh.approx.f32": (lambda x: approx.tanh(x), np.tanh, "rel", 2**-11),
}


def _within(kind, bound, x, y, ref):
    """Which lanes of y are within the ISA bound of the exact ref (finite, normal lanes)."""
    with np.errstate(all="ignore"):
        r32 = ref.astype(np.float32)
        if kind == "ulp":
            return _ulp_distance(y, r32) <= bound
        if kind == "rel":
            return np.abs(y.astype(np.float64) - ref) <= bound * np.abs(ref)
        if kind == "lg2":
            err = np.abs(y.astype(np.float64) - ref)
            inside = (x > 0.5) & (x < 2)
            return np.where(inside, err <= bound, err <= bound * np.abs(ref))
        return np.abs(y.astype(np.float64) - ref) <= bound  # abs2pi


@pytest.mark.parametrize("op", sorted(F32_APPROX))
def test_f32_approx_within_isa_bound_and_specials_match_h200(op):
    fn, ref_fn, kind, bound = F32_APPROX[op]
    xi, h200 = APPROX[f"{op}|in0"], APPROX[f"{op}|out"]
    x = xi.view(np.float32)
    ours = fn(x)
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
    normal = (
        np.isfinite(x) & np.isfinite(ref) & (np.abs(x) >= 2.0**-126) & (np.abs(ref) >= 2.0**-126)
    )
    if kind == "abs2pi":
        normal &= np.abs(x) <= 2 * np.pi
    assert normal.sum() > 1000
    ok_ours = _within(kind, bound, x[normal], ours[normal], ref[normal])
    ok_h200 = _within(kind, bound, x[normal], h200.view(np.float32)[normal], ref[normal])
    assert ok_ours.all(), x[normal][~ok_ours][:5]
    assert ok_h200.mean() > 0.999  # the H200 itself keeps the ISA's bound
    # special inputs and results (inf, NaN, zeros, flushed values): identical bits
    h = h200.view(np.float32)
    special = ~np.isfinite(x) | (x == 0) | ~np.isfinite(h) | np.isnan(ref)
    if kind != "abs2pi":  # sin/cos.approx work in absolute error: the H200 gives 0 for
        special |= h == 0  # |x| < 1.9e-7, which is within 2**-20.5 of sin(x)
    nan_both = np.isnan(ours) & np.isnan(h)
    same = (ours.view(np.uint32) == h200) | nan_both
    assert same[special].all(), [(hex(a), hex(b), hex(c)) for a, b, c in
                                  zip(xi[special & ~same], ours.view(np.uint32)[special & ~same],
                                      h200[special & ~same], strict=True)][:5]  # fmt: skip
    # subnormal inputs or results (no ISA bound in ulp there): within 2 steps of the H200
    rest = ~normal & ~special
    if kind == "abs2pi":
        rest &= np.abs(x) <= 2 * np.pi
        assert (np.abs(ours[rest] - ref[rest]) <= bound).all()
    else:
        assert (_ulp_distance(ours[rest], h[rest]) <= 2).all()


@pytest.mark.parametrize("op", ["rcp.approx.ftz.f64", "rsqrt.approx.ftz.f64"])
def test_ftz_f64_approx_use_the_high_words(op):
    xi, h200 = APPROX[f"{op}|in0"], APPROX[f"{op}|out"]
    fn = approx.rcp_approx if op.startswith("rcp") else approx.rsqrt
    ours = fn(xi.view(np.float64), "f64", ftz=True)
    assert np.all((ours.view(np.uint64) & np.uint64(0xFFFFFFFF)) == 0)
    x = xi.view(np.float64)
    ref = (lambda v: 1 / v) if op.startswith("rcp") else (lambda v: 1 / np.sqrt(v))
    fin = np.isfinite(x) & (np.abs(x) > 2.0**-1020) & (np.abs(x) < 2.0**1020) & (x > 0)
    with np.errstate(all="ignore"):
        rel_ours = np.abs(ours[fin] / ref(x[fin]) - 1)
        rel_h200 = np.abs(h200.view(np.float64)[fin] / ref(x[fin]) - 1)
    assert rel_ours.max() < 2.0**-20 and rel_h200.max() < 2.0**-20
    assert (ours.view(np.uint64)[fin] == h200[fin]).mean() > 0.9
    specials = ~fin & ~((x < 0) & np.isfinite(x) & (np.abs(x) > 2.0**-1020) & op.startswith("rcp"))
    assert np.array_equal(ours.view(np.uint64)[specials], h200[specials])


def test_f16_bf16_approx_tables_are_the_h200s_and_x2_is_per_element():
    x2 = np.load(DATA / "h200_approx_x2.npz")
    for name, fn in (("tanh.approx.f16x2", approx.tanh), ("ex2.approx.f16x2", approx.ex2)):
        got = fn(x2[f"{name}|in0"], "f16x2")
        assert np.array_equal(got, x2[f"{name}|out"])


@pytest.mark.parametrize(
    "fn,t,ref,kind,bound",
    [(approx.ex2, "f16", np.exp2, "rel", 2**-9.9), (approx.ex2, "bf16", np.exp2, "rel", 2**-7),
     (approx.tanh, "f16", np.tanh, "abs", 2**-10.987), (approx.tanh, "bf16", np.tanh, "abs", 2**-8)],
)  # fmt: skip
def test_half_approx_within_isa_bound(fn, t, ref, kind, bound):
    from ptxls.emulator.semantics.formats import decode

    h = np.arange(65536, dtype=np.uint16)
    x = decode(h, t)
    y = decode(fn(h, t), t)
    with np.errstate(all="ignore"):
        r = ref(x)
    tiny = 2.0**-14 if t == "f16" else 2.0**-126
    lanes = np.isfinite(x) & np.isfinite(r) & (np.abs(r) >= tiny) & (np.abs(r) <= 60000)
    if t == "bf16":
        lanes &= np.abs(x) >= tiny  # ex2.approx.ftz.bf16 flushes subnormal inputs
    err = np.abs(y[lanes] - r[lanes])
    limit = bound * np.abs(r[lanes]) if kind == "rel" else bound
    if (fn, t) == (approx.tanh, "bf16"):
        # the H200's own tanh.approx.bf16 (our table) misses the ISA's 2**-8 by 2**-22 at
        # x = 0.74609375 (0.62890625 for 0.6328127...); documented in the README
        limit = bound + 2.0**-21
    assert np.all(err <= limit * (1 + 2**-20))
    # ISA corner cases
    specials = {"f16": (0x7C00, 0xFC00, 0x8000), "bf16": (0x7F80, 0xFF80, 0x8000)}[t]
    pinf, ninf, nzero = (decode(fn(np.array([s], np.uint16), t), t)[0] for s in specials)
    if fn is approx.ex2:
        assert pinf == np.inf and ninf == 0 and nzero == 1
    else:
        assert pinf == 1 and ninf == -1 and nzero == 0 and np.signbit(nzero)
