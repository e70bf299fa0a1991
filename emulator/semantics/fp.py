"""f32 and f64 arithmetic with every PTX rounding modifier, ``.ftz``, ``.sat`` and NaN rule.

Inputs are numpy arrays of float32 (f32) or float64 (f64), one element per lane; the result
has the same dtype. f32 work is done exactly in float64 (a product of two f32 is exact there;
a sum or an fma gets its rest from TwoSum) and rounded once with ``rounding.round_pair``.
f64 work uses numpy's correctly rounded ``+ - * / sqrt`` for ``.rn`` and error-free
transformations for the other modes and for fma; the rare lanes whose error term would
underflow or overflow go through exact rational arithmetic (``_exact_lanes``), a Python loop
over those lanes only, because float64 has nothing wider to fall back on.

NaN results, as the H200 gives them (tests/data/emulator/h200_facts.json):
- f32: always the canonical NaN 0x7fffffff (abs and neg included; copysign is a bit copy).
- f64: a NaN operand propagates, quieted (payload kept, bit 51 set): for add/sub/mul/fma/
  sqrt/min/max the LAST NaN operand in operand order wins, for div the first; a NaN made
  from non-NaN operands (inf-inf, 0*inf, 0/0, sqrt(-1)) is 0xfff8000000000000.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .rounding import F32, F64, product_is_exact, round_pair, two_product, two_sum

CANON_NAN_F32 = np.uint32(0x7FFFFFFF).view(np.float32)
CANON_NAN_F64 = np.uint64(0xFFF8000000000000).view(np.float64)  # the f64 "default NaN"
_QUIET_F64 = np.uint64(0x0008000000000000)
FLT_MIN = np.float32(2.0**-126)


def _canon(x: np.ndarray) -> np.ndarray:
    nan_lanes = np.isnan(x)
    if not nan_lanes.any():  # the usual case: no copy
        return x
    nan = CANON_NAN_F32 if x.dtype == np.float32 else CANON_NAN_F64
    return np.where(nan_lanes, nan, x).astype(x.dtype, copy=False)


@np.errstate(all="ignore")
def flush_subnormal(x: np.ndarray) -> np.ndarray:
    """``.ftz`` for f32: a subnormal becomes a zero of the same sign (other values unchanged)."""
    x = np.asarray(x)
    with np.errstate(invalid="ignore"):
        sub = (np.abs(x) < FLT_MIN) & (x != 0)
    return np.where(sub, np.copysign(np.float32(0), x), x).astype(x.dtype, copy=False)


@np.errstate(all="ignore")
def saturate(x: np.ndarray) -> np.ndarray:
    """``.sat``: clamp to [0.0, 1.0]; NaN and -0.0 become +0.0."""
    x = np.asarray(x)
    with np.errstate(invalid="ignore"):
        r = np.where(np.isnan(x) | (x <= 0), 0.0, np.minimum(x, 1.0))
    return r.astype(x.dtype)


def _finish(r64: np.ndarray, dtype, ftz: bool, sat: bool, ops=(), first_nan=False) -> np.ndarray:
    r = r64.astype(dtype)
    if ftz and dtype == np.float32:
        r = flush_subnormal(r)
    if sat:
        r = saturate(r)
    if dtype == np.float64:
        return propagate_nan_f64(r, ops, first_nan)
    return _canon(r)


@np.errstate(all="ignore")
def propagate_nan_f64(r: np.ndarray, ops, first_nan: bool = False) -> np.ndarray:
    """The H200's f64 NaN result: the last (``first_nan``: the first) NaN among ``ops``,
    quieted; a NaN from non-NaN operands → 0xfff8000000000000."""
    nan = np.isnan(r)
    if not nan.any():
        return r
    bits = np.where(nan, CANON_NAN_F64, r).view(np.uint64)
    order = list(ops) if first_nan else list(ops)[::-1]
    for op in reversed(order):  # the highest priority is applied last
        op = np.broadcast_to(np.asarray(op, dtype=np.float64), r.shape)
        bits = np.where(nan & np.isnan(op), op.view(np.uint64) | _QUIET_F64, bits)
    return bits.view(np.float64)


def _prep(arrays, ftz: bool):
    """The operands as arrays of the FIRST operand's float type (an immediate or scalar
    operand is converted to the instruction's type, as the register would hold it)."""
    first = np.asarray(arrays[0])
    dt = first.dtype
    if dt not in (np.float32, np.float64):
        raise TypeError(f"expected float32 or float64 arrays, got {dt}")
    arrays = [first] + [np.asarray(a, dtype=dt) for a in arrays[1:]]
    if ftz and dt == np.float32:
        arrays = [flush_subnormal(a) for a in arrays]
    return dt, arrays


# ----------------------------------------------------------------------------- exact fallback


def _to_fraction(x: float) -> Fraction:
    return Fraction(x)


def _round_fraction_f64(v: Fraction, mode: str) -> float:
    """A rational rounded to float64 with ``mode`` (Python's int division is correctly
    rounded to nearest; the directed modes step one ulp where needed)."""
    if v == 0:  # only a cancelling sum gets here: IEEE 754 6.3 gives -0 under .rm, else +0
        return -0.0 if mode == "rm" else 0.0
    neg = v < 0
    try:
        f = v.numerator / v.denominator
    except OverflowError:
        f = -np.inf if neg else np.inf
    if np.isinf(f):  # a finite value beyond the largest double
        away = mode == "rn" or (mode == "rp" and not neg) or (mode == "rm" and neg)
        return f if away else float(np.copysign(F64.max_finite, f))
    diff = v - Fraction(f)
    if mode == "rz" and ((diff < 0 and f > 0) or (diff > 0 and f < 0)):
        f = float(np.nextafter(f, 0.0))
    elif mode == "rm" and diff < 0:
        f = float(np.nextafter(f, -np.inf))
    elif mode == "rp" and diff > 0:
        f = float(np.nextafter(f, np.inf))
    if f == 0:
        f = -0.0 if neg else 0.0
    return f


def _exact_lanes(fn, lanes: np.ndarray, mode: str, *arrays: np.ndarray) -> np.ndarray:
    """fn(Fractions...) -> Fraction for the lanes in ``lanes`` (a Python loop: used only where
    an error-free transformation in float64 is not exact — extreme exponents)."""
    idx = np.flatnonzero(lanes)
    out = np.empty(idx.size, dtype=np.float64)
    flat = [a.reshape(-1) for a in arrays]
    for k, i in enumerate(idx):
        out[k] = _round_fraction_f64(fn(*(_to_fraction(float(a[i])) for a in flat)), mode)
    return out


# ----------------------------------------------------------------------------- add sub mul fma


@np.errstate(all="ignore")
def add(a, b, rnd: str = "rn", ftz: bool = False, sat: bool = False) -> np.ndarray:
    """``add{.rnd}{.ftz}{.sat}.f32`` / ``add{.rnd}.f64``: a + b, one rounding with ``rnd``."""
    dt, (a, b) = _prep((a, b), ftz)
    if rnd == "rn":  # numpy's float32/float64 add is IEEE round-to-nearest-even
        return _finish(a + b, dt, ftz, sat, (a, b))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    s, e = two_sum(a64, b64)
    finite_in = np.isfinite(a64) & np.isfinite(b64)
    e = np.where(finite_in & np.isfinite(s), e, 0.0)
    if dt == np.float32:
        r = round_pair(s, e, F32, rnd)
    else:
        r = round_pair(s, e, F64, rnd)
        over = finite_in & np.isinf(s)
        if over.any():
            r = np.where(over, _overflow(s, rnd), r)
    r = _zero_sum_sign(r, a64, b64, rnd, s == 0)
    return _finish(r, dt, ftz, sat, (a64, b64))


@np.errstate(all="ignore")
def sub(a, b, rnd: str = "rn", ftz: bool = False, sat: bool = False) -> np.ndarray:
    """``sub``: a - b (exactly ``add(a, -b)``, NaN excepted, which is canonical anyway)."""
    return add(a, -np.asarray(b), rnd, ftz, sat)


def _zero_sum_sign(r, a, b, rnd, exact_zero):
    # IEEE 754 6.3: an EXACT zero sum of opposite-signed operands is +0, or -0 under .rm
    # (numpy already gives -0 for (-0) + (-0)); a nonzero sum that rounds to zero keeps
    # its own sign, which round_pair gave it.
    if rnd != "rm":
        return r
    both_plus_zero = (a == 0) & (b == 0) & ~np.signbit(a) & ~np.signbit(b)
    return np.where(exact_zero & (r == 0) & ~both_plus_zero, -0.0, r)


def _overflow(s, rnd):
    away = {"rn": True, "rz": False}.get(rnd)
    if away is None:
        away = (s < 0) if rnd == "rm" else (s > 0)
    return np.where(away, s, np.copysign(F64.max_finite, s))


@np.errstate(all="ignore")
def mul(a, b, rnd: str = "rn", ftz: bool = False, sat: bool = False) -> np.ndarray:
    """``mul{.rnd}{.ftz}{.sat}.f32`` / ``mul{.rnd}.f64``: a * b."""
    dt, (a, b) = _prep((a, b), ftz)
    if rnd == "rn":
        return _finish(a * b, dt, ftz, sat, (a, b))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if dt == np.float32:
        with np.errstate(all="ignore"):
            r = round_pair(a64 * b64, 0.0, F32, rnd)  # the f32 product is exact in float64
        return _finish(r, dt, ftz, sat)
    p, e = two_product(a64, b64)
    finite_in = np.isfinite(a64) & np.isfinite(b64)
    ok = product_is_exact(a64, b64) | ~finite_in
    e = np.where(ok & finite_in & np.isfinite(p), e, 0.0)
    r = round_pair(p, e, F64, rnd)
    slow = ~ok & finite_in & (rnd != "rn")
    if slow.any():
        r[slow] = _exact_lanes(lambda x, y: x * y, slow, rnd, a64, b64)
    over = finite_in & np.isinf(p) & ~slow
    if over.any():
        r = np.where(over, _overflow(p, rnd), r)
    return _finish(r, dt, ftz, sat, (a64, b64))


@np.errstate(all="ignore")
def fma(a, b, c, rnd: str = "rn", ftz: bool = False, sat: bool = False) -> np.ndarray:
    """``fma.rnd{.ftz}{.sat}.f32`` / ``fma.rnd.f64`` (and ``mad.rnd``): a*b + c with ONE
    rounding. f32: exact product in float64 + TwoSum. f64: TwoProduct, TwoSum and a
    round-to-odd step give RN and the sign of the rest (exact while no error term underflows;
    such lanes take the rational path)."""
    dt, (a, b, c) = _prep((a, b, c), ftz)
    a64, b64, c64 = (x.astype(np.float64) for x in (a, b, c))
    finite_in = np.isfinite(a64) & np.isfinite(b64) & np.isfinite(c64)
    with np.errstate(all="ignore"):
        naive = a64 * b64 + c64  # the right inf/NaN for non-finite inputs
    if dt == np.float32 and rnd == "rn":
        return _finish(_fma32_rn(a64, b64, c64), dt, ftz, sat)
    if dt == np.float32:
        with np.errstate(all="ignore"):
            p = a64 * b64
        s, e = two_sum(p, c64)
        e = np.where(finite_in, e, 0.0)
        s = np.where(finite_in, s, naive)
        r = round_pair(s, e, F32, rnd)
        r = _zero_sum_sign(r, p, c64, rnd, s == 0)
        return _finish(r, dt, ftz, sat)
    ok = finite_in & product_is_exact(a64, b64) & (np.abs(c64) < 2.0**1000)
    z, rest_sign = _fma64_rn(np.where(ok, a64, 0.0), np.where(ok, b64, 0.0), np.where(ok, c64, 0.0))
    r = round_pair(z, rest_sign, F64, rnd)
    with np.errstate(all="ignore"):
        p0 = a64 * b64
    exact_zero = (z == 0) & (rest_sign == 0)
    with np.errstate(all="ignore"):
        r = np.where(exact_zero, p0 + c64, r)  # IEEE's sign of an exact zero sum (rn)
    r = np.where(ok, _zero_sum_sign(r, p0, c64, rnd, exact_zero), naive)
    slow = finite_in & ~ok
    if slow.any():
        r[slow] = _exact_lanes(lambda x, y, w: x * y + w, slow, rnd, a64, b64, c64)
    return _finish(r, dt, ftz, sat, (a64, b64, c64))


def _fma32_rn(a64, b64, c64):
    """fma.rn.f32 fast: a*b is exact in float64, so RN32(fl64(a*b + c)) is right unless
    fl64(a*b + c) fell exactly on an f32 midpoint (its low 28 significand bits are zero,
    which also catches exact values): those few lanes are redone exactly."""
    with np.errstate(all="ignore"):
        p = a64 * b64
        s = p + c64
        r = s.astype(np.float32)
    cand = np.flatnonzero(((s.view(np.uint64) & np.uint64(0x0FFFFFFF)) == 0) & np.isfinite(s))
    if cand.size:
        ps, es = two_sum(p[cand], c64[cand])
        rr = round_pair(ps, es, F32, "rn")
        r[cand] = rr.astype(np.float32)
    return r.astype(np.float64)


def _fma64_rn(a, b, c):
    """RN64(a*b + c) and the sign of the rest (exact value minus result), for finite lanes
    whose TwoProduct is exact. a*b + c = h + l + e2 exactly; l + e2 is rounded to odd so
    that the final RN sees every sticky bit (Boldo-Melquiond)."""
    ph, pl = two_product(a, b)
    s1, e1 = two_sum(ph, c)
    s2, e2 = two_sum(e1, pl)
    h, lo = two_sum(s1, s2)
    t, u = two_sum(lo, e2)
    bits = t.view(np.uint64)
    odd_fix = (u != 0) & ((bits & np.uint64(1)) == 0)
    with np.errstate(all="ignore"):
        t_odd = np.where(odd_fix, np.nextafter(t, np.where(u > 0, np.inf, -np.inf)), t)
        z = h + t_odd
        w = h - z  # exact: z is h's neighbourhood
        w2, _ = two_sum(w, t)
    rest = np.where(w2 != 0, np.sign(w2), np.sign(u))
    overflow = np.isinf(z)
    rest = np.where(overflow, 0.0, rest)
    return z, rest


# ----------------------------------------------------------------------------- div rcp sqrt


@np.errstate(all="ignore")
def div(a, b, rnd: str = "rn", ftz: bool = False) -> np.ndarray:
    """``div.rnd{.ftz}.f32`` / ``div.rnd.f64`` (IEEE, correctly rounded with ``rnd``),
    ``div.full{.ftz}.f32`` (rnd="full": ISA bound 2 ulp; here the correctly rounded value) and
    ``div.approx{.ftz}.f32`` (rnd="approx": a * (1/b), ISA bound 2 ulp for |b| in
    [2**-126, 2**126]; for 2**126 < |b| < 2**128 the ISA gives 0, or NaN when a is inf)."""
    if rnd in ("full", "approx"):
        a, b = (np.asarray(x, dtype=np.float32) for x in (a, b))
        r = div(a, b, "rn", ftz)
        if rnd == "approx":
            big = (np.abs(b) > np.float32(2.0**126)) & np.isfinite(b)
            r = np.where(
                big,
                np.where(np.isinf(a), CANON_NAN_F32, np.float32(0.0) * np.sign(a) * np.sign(b)),
                r,
            )
            r = _canon(np.where(big & (a == 0), np.float32(0.0), r).astype(np.float32))
        return r
    dt, (a, b) = _prep((a, b), ftz)
    if rnd == "rn":  # numpy's division is IEEE correctly rounded in both widths
        return _finish(a / b, dt, ftz, False, (a, b), first_nan=True)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        s = a64 / b64
    rest_ok = np.isfinite(s) & (s != 0) & np.isfinite(a64) & np.isfinite(b64)
    e, exact_ok = _residual_div(a64, b64, s, rest_ok)
    if dt == np.float32:
        return _finish(round_pair(s, e, F32, rnd), dt, ftz, False)
    r = round_pair(s, e, F64, rnd)
    slow = rest_ok & ~exact_ok & (rnd != "rn")
    if slow.any():
        r[slow] = _exact_lanes(lambda x, y: x / y, slow, rnd, a64, b64)
    over = np.isinf(s) & np.isfinite(a64) & np.isfinite(b64) & (b64 != 0)
    if over.any():
        r = np.where(over, _overflow(s, rnd), r)
    under = (s == 0) & (a64 != 0) & np.isfinite(b64)
    if under.any():  # the quotient underflowed to zero in RN: rounding may want min subnormal
        r[under] = _exact_lanes(lambda x, y: x / y, under, rnd, a64, b64)
    return _finish(r, dt, ftz, False, (a64, b64), first_nan=True)


def _residual_div(a, b, s, lanes):
    """Sign-correct estimate of a/b - s from the exact residual a - s*b."""
    ok = lanes & product_is_exact(s, b) & (np.abs(a) < 2.0**1000)
    with np.errstate(all="ignore"):
        p, pe = two_product(np.where(ok, s, 0.0), np.where(ok, b, 0.0))
        res = (np.where(ok, a, 0.0) - p) - pe
        e = np.where(ok, res / np.where(ok, b, 1.0), 0.0)
        # res / b can underflow to 0 beside a subnormal quotient: keep at least its sign
        lost = ok & (res != 0) & (e == 0)
        e = np.where(lost, np.copysign(5e-324, res) * np.sign(b), e)
    return e, ok


@np.errstate(all="ignore")
def rcp(a, rnd: str = "rn", ftz: bool = False) -> np.ndarray:
    """``rcp.rnd{.ftz}.f32`` / ``rcp.rnd.f64``: 1/a correctly rounded. ``rcp.approx`` lives in
    ``approx.rcp_approx`` (bound stated there)."""
    a = np.asarray(a)
    return div(np.ones_like(a), a, rnd, ftz)


@np.errstate(all="ignore")
def sqrt(a, rnd: str = "rn", ftz: bool = False) -> np.ndarray:
    """``sqrt.rnd{.ftz}.f32`` / ``sqrt.rnd.f64``: correctly rounded square root (sqrt(-0) = -0,
    negative → NaN)."""
    dt, (a,) = _prep((a,), ftz)
    if rnd == "rn":  # numpy's sqrt is IEEE correctly rounded in both widths
        return _finish(np.sqrt(a), dt, ftz, False, (a,))
    a64 = a.astype(np.float64)
    with np.errstate(all="ignore"):
        s = np.sqrt(a64)
    lanes = np.isfinite(s) & (s > 0)
    ok = lanes & product_is_exact(s, s)
    with np.errstate(all="ignore"):
        p, pe = two_product(np.where(ok, s, 0.0), np.where(ok, s, 0.0))
        e = np.where(ok, ((np.where(ok, a64, 0.0) - p) - pe) / (2 * np.where(ok, s, 1.0)), 0.0)
    if dt == np.float32:
        return _finish(round_pair(s, e, F32, rnd), dt, ftz, False)
    r = round_pair(s, e, F64, rnd)
    slow = lanes & ~ok & (rnd != "rn")
    if slow.any():
        r[slow] = _sqrt_exact_lanes(slow, rnd, a64)
    return _finish(r, dt, ftz, False, (a64,))


def _sqrt_exact_lanes(lanes, rnd, a64):
    idx = np.flatnonzero(lanes)
    s = np.sqrt(a64.reshape(-1)[idx])
    out = s.copy()
    for k, i in enumerate(idx):
        x = Fraction(float(a64.reshape(-1)[i]))
        f = float(s[k])
        sq = Fraction(f) ** 2
        if rnd == "rp" and sq < x:
            out[k] = np.nextafter(f, np.inf)
        elif rnd in ("rz", "rm") and sq > x:
            out[k] = np.nextafter(f, 0.0)
    return out


# ----------------------------------------------------------------------------- min max abs neg


@np.errstate(all="ignore")
def fmin(a, b, ftz: bool = False, nan: bool = False) -> np.ndarray:
    """``min{.ftz}{.NaN}.f32`` / ``min.f64``: the smaller; -0.0 < +0.0. One NaN operand →
    the other operand; both NaN → canonical NaN. ``.NaN`` (nan=True): any NaN → canonical."""
    return _minmax(a, b, ftz, nan, np.less)


@np.errstate(all="ignore")
def fmax(a, b, ftz: bool = False, nan: bool = False) -> np.ndarray:
    """``max{.ftz}{.NaN}.f32`` / ``max.f64``: as ``fmin``, the larger; +0.0 > -0.0."""
    return _minmax(a, b, ftz, nan, np.greater)


def _minmax(a, b, ftz, nan, better):
    dt, (a, b) = _prep((a, b), ftz)
    with np.errstate(invalid="ignore"):
        pick_a = better(a, b) | ((a == b) & (np.signbit(a) == (better is np.less)))
    r = np.where(pick_a, a, b)
    na, nb = np.isnan(a), np.isnan(b)
    r = np.where(na & ~nb, b, np.where(nb & ~na, a, r))
    if nan:
        r = np.where(na | nb, np.nan, r)
    if dt == np.float64:
        return propagate_nan_f64(r.astype(dt), (a, b))
    return _canon(r.astype(dt))


@np.errstate(all="ignore")
def fabs(a, ftz: bool = False) -> np.ndarray:
    """``abs{.ftz}.f32`` / ``abs.f64``: clears the sign bit. f32 NaN → canonical NaN (H200);
    f64 NaN keeps its bits but the sign (not measured)."""
    dt, (a,) = _prep((a,), ftz)
    r = np.abs(a)
    return _canon(r) if dt == np.float32 else r


@np.errstate(all="ignore")
def fneg(a, ftz: bool = False) -> np.ndarray:
    """``neg{.ftz}.f32`` / ``neg.f64``: flips the sign bit. f32 NaN → canonical NaN (H200)."""
    dt, (a,) = _prep((a,), ftz)
    r = -a
    return _canon(r) if dt == np.float32 else r


@np.errstate(all="ignore")
def copysign(a, b) -> np.ndarray:
    """``copysign.f32 d, a, b``: b's magnitude with a's sign (PTX operand order)."""
    a, b = np.asarray(a), np.asarray(b)
    return np.copysign(b, a).astype(b.dtype)


# ----------------------------------------------------------------------------- setp testp

_CMP = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")


@np.errstate(all="ignore")
def setp(cmp: str, a, b, ftz: bool = False) -> np.ndarray:
    """``setp.cmp{.ftz}.f32/.f64`` (and the compare of ``set``/``slct``): a bool array.
    Ordered (eq ne lt le gt ge) are false when either operand is NaN; unordered (equ neu ltu
    leu gtu geu) true; ``num``: neither is NaN; ``nan``: either is."""
    if cmp not in _CMP:
        raise ValueError(f"unknown float comparison {cmp!r}")
    _, (a, b) = _prep((a, b), ftz)
    un = np.isnan(a) | np.isnan(b)
    if cmp == "num":
        return ~un
    if cmp == "nan":
        return un
    base = cmp[:2]
    with np.errstate(invalid="ignore"):
        r = {
            "eq": np.equal,
            "ne": np.not_equal,
            "lt": np.less,
            "le": np.less_equal,
            "gt": np.greater,
            "ge": np.greater_equal,
        }[base](a, b)
    return (r & ~un) if len(cmp) == 2 else (r | un)


@np.errstate(all="ignore")
def testp(op: str, a) -> np.ndarray:
    """``testp.op.f32/.f64``: finite, infinite, number, notanumber, normal, subnormal."""
    a = np.asarray(a)
    tiny = np.finfo(a.dtype).tiny
    absa = np.abs(a)
    with np.errstate(invalid="ignore"):
        table = {
            "finite": np.isfinite(a),
            "infinite": np.isinf(a),
            "number": ~np.isnan(a),
            "notanumber": np.isnan(a),
            "normal": np.isfinite(a) & (absa >= tiny),
            "subnormal": (absa < tiny) & (a != 0),
        }
    return table[op]
