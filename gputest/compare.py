"""Comparing a kernel's output with the reference, element by element.

Error measure for floats: |got - expected| / max(|expected|, floor), where floor is 1e-3 of the
largest |expected| (so an element that should be ~0 is judged against the output's scale, not
against zero). An element passes when that is ≤ rtol. NaN passes only where the reference is NaN;
an element that still holds the poison was never written, which is said separately. Integers must
match exactly. A guard catches outputs that are all zero or constant while the reference is not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import parallel
from .dtypes import DType, to_float64

MAX_SHOWN = 5


@dataclass
class Mismatch:
    index: int
    expected: float
    got: float
    unwritten: bool  # still holds the poison


@dataclass
class Comparison:
    name: str  # the output parameter
    total: int
    wrong: int = 0
    unwritten: int = 0
    max_rel_err: float = 0.0
    first_wrong: list[Mismatch] = field(default_factory=list)
    guard: str = ""  # "all zeros" / "constant" when the output is degenerate and the reference not

    @property
    def passed(self) -> bool:
        return self.wrong == 0 and not self.guard

    def describe(self) -> str:
        """'c: 997 of 1000 wrong (3 never written); first wrong c[3] expected 1.5 got 0.25, ...'"""
        if self.passed:
            return f"{self.name}: all {self.total} match (max rel err {self.max_rel_err:.2e})"
        parts = []
        if self.wrong:
            s = f"{self.name}: {self.wrong} of {self.total} wrong"
            if self.unwritten:
                s += f" ({self.unwritten} never written)"
            parts.append(s)
            shown = ", ".join(
                f"{self.name}[{m.index}] expected {_fmt(m.expected)} got "
                + ("unwritten" if m.unwritten else _fmt(m.got))
                for m in self.first_wrong
            )
            parts.append(f"first wrong: {shown}")
        if self.guard:
            parts.append(f"{self.name} is {self.guard} but the reference is not")
        return "; ".join(parts)


def as_bits(a: np.ndarray) -> np.ndarray:
    """The raw bits as unsigned integers of the same width: bitwise equality, NaN == NaN."""
    return a.view(f"u{a.dtype.itemsize}")


def _fmt(v: float) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.7g}"


def compare(
    name: str,
    dt: DType,
    expected_raw: np.ndarray,
    got_raw: np.ndarray,
    poison_raw: np.ndarray,
    rtol: float | None = None,
) -> Comparison:
    """``*_raw`` are arrays in the storage dtype (bf16 as uint16 bits), same length;
    ``poison_raw`` may also be a single element, the pattern every output started as.

    Fast path first: elements whose bits equal the reference's are right (most of them, for a
    correct kernel); only the rest are converted to float64 and measured. At 16M elements this
    is the difference between ~0.1 s and seconds."""
    total = len(got_raw)
    result = Comparison(name, total)
    if total == 0:
        return result
    got_bits, exp_bits = as_bits(got_raw), as_bits(expected_raw)
    # From parallel.PARALLEL_MIN elements on, every step below runs over fixed chunks on threads
    # (element-wise, so the result is the one-call result; first_wrong keeps index order).
    spans = parallel.spans(total)
    differs = parallel.map_spans(lambda s: np.flatnonzero(got_bits[s] != exp_bits[s]), spans)
    if not any(len(d) for d in differs):
        # Every bit equals the reference's: right, max error 0, and not degenerate (an output
        # equal to the reference is all zeros or constant only where the reference is too).
        return result
    pbits = as_bits(poison_raw)  # one element (the pattern) or one per element
    floor = 0.0
    tol = (dt.rtol if rtol is None else rtol) if dt.is_float else 0.0
    if dt.is_float:
        biggest = max(parallel.map_spans(lambda s: _max_abs_finite(dt, expected_raw[s]), spans))
        floor = max(biggest * 1e-3, np.finfo(np.float64).tiny)

    def measure(k: int) -> tuple[float, int, int, list[Mismatch]]:
        s, differ = spans[k], differs[k]
        if not len(differ):
            return 0.0, 0, 0, []
        exp_part, got_part = expected_raw[s], got_raw[s]
        unwritten_all = got_bits[s][differ] == (pbits[0] if len(pbits) == 1 else pbits[s][differ])
        exp_d = to_float64(dt, exp_part[differ])
        got_d = to_float64(dt, got_part[differ])
        if dt.is_float:
            with np.errstate(invalid="ignore", over="ignore"):
                err = np.abs(got_d - exp_d) / np.maximum(np.abs(exp_d), floor)
            # Bits differ but values agree: NaN payloads, +0 vs -0, equal infinities.
            err[(np.isnan(exp_d) & np.isnan(got_d)) | (got_d == exp_d)] = 0.0
            err[np.isnan(err)] = np.inf
            bad_mask = (err > tol) | unwritten_all
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                err = np.abs(got_d - exp_d) / np.maximum(np.abs(exp_d), 1.0)
            bad_mask = np.ones(len(differ), dtype=bool)
        shown = [
            Mismatch(int(differ[i]) + s.start, float(exp_d[i]), float(got_d[i]),
                     bool(unwritten_all[i]))
            for i in np.flatnonzero(bad_mask)[:MAX_SHOWN]
        ]  # fmt: skip
        return (float(err.max()) if len(err) else 0.0, int(bad_mask.sum()),
                int((unwritten_all & bad_mask).sum()), shown)  # fmt: skip

    parts = parallel.map_spans(
        lambda s: measure(s.start), [slice(k, k + 1) for k in range(len(spans))]
    )
    result.max_rel_err = max(p[0] for p in parts)
    result.wrong = sum(p[1] for p in parts)
    result.unwritten = sum(p[2] for p in parts)
    result.first_wrong = [m for p in parts for m in p[3]][:MAX_SHOWN]
    result.guard = degenerate(dt, expected_raw, got_raw) if total > 1 else ""
    return result


def _max_abs_finite(dt: DType, raw: np.ndarray) -> float:
    values = to_float64(dt, raw) if dt.decode is not None else raw
    with np.errstate(invalid="ignore"):
        m = np.nanmax(np.abs(np.where(np.isfinite(values), values, np.nan))) if len(values) else 0.0
    return 0.0 if np.isnan(m) else float(m)


def degenerate(dt: DType, exp_raw: np.ndarray, got_raw: np.ndarray) -> str:
    """'all zeros' or 'constant' when the output is and the reference is not; '' otherwise
    (bitwise, so a NaN-filled output counts as constant)."""
    got, exp = as_bits(got_raw), as_bits(exp_raw)
    zero_bits = as_bits(np.zeros(1, dtype=got_raw.dtype))[0]
    spans = parallel.spans(len(got))

    def every(a: np.ndarray, value) -> bool:
        return all(parallel.map_spans(lambda s: bool(np.all(a[s] == value)), spans))

    if every(got, zero_bits) and not every(exp, zero_bits):
        return "all zeros"
    if every(got, got[0]) and not every(exp, exp[0]):
        return f"constant ({_fmt(float(to_float64(dt, got_raw[:1])[0]))})"
    return ""


def changed(name: str, before: np.ndarray, after: np.ndarray) -> str:
    """'' when byte-identical; otherwise what changed, for inputs that must stay const."""
    if len(before) == 0:
        return ""
    diff = np.flatnonzero(as_bits(after) != as_bits(before))
    if len(diff) == 0:
        return ""
    idx = ", ".join(str(int(i)) for i in diff[:MAX_SHOWN])
    return (
        f"input {name} was modified: {len(diff)} of {len(before)} elements changed (first at {idx})"
    )
