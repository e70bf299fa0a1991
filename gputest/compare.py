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
    """``*_raw`` are arrays in the storage dtype (bf16 as uint16 bits), same length."""
    total = len(got_raw)
    result = Comparison(name, total)
    if total == 0:
        return result
    unwritten = got_raw.view(np.uint8).reshape(total, -1) == poison_raw.view(np.uint8).reshape(
        total, -1
    )
    unwritten = unwritten.all(axis=1)
    exp = to_float64(dt, expected_raw)
    got = to_float64(dt, got_raw)
    if dt.is_float:
        tol = dt.rtol if rtol is None else rtol
        finite = np.isfinite(exp)
        scale = float(np.max(np.abs(exp[finite]))) if finite.any() else 0.0
        floor = max(scale * 1e-3, np.finfo(np.float64).tiny)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(got - exp) / np.maximum(np.abs(exp), floor)
        both_nan = np.isnan(exp) & np.isnan(got)
        same_inf = np.isinf(exp) & (got == exp)
        err[both_nan | same_inf] = 0.0
        err[np.isnan(err)] = np.inf
        bad = (err > tol) | unwritten
        finite_err = err[~bad]
        result.max_rel_err = float(err.max()) if bad.any() else float(finite_err.max(initial=0.0))
    else:
        bad = (got_raw != expected_raw) | unwritten
        with np.errstate(invalid="ignore", divide="ignore"):
            err = np.abs(got - exp) / np.maximum(np.abs(exp), 1.0)
        result.max_rel_err = float(err.max())
    result.wrong = int(bad.sum())
    result.unwritten = int((unwritten & bad).sum())
    for i in np.flatnonzero(bad)[:MAX_SHOWN]:
        result.first_wrong.append(
            Mismatch(int(i), float(exp[i]), float(got[i]), bool(unwritten[i]))
        )
    result.guard = degenerate(exp, got) if total > 1 else ""
    return result


def degenerate(exp: np.ndarray, got: np.ndarray) -> str:
    """'all zeros' or 'constant' when the output is and the reference is not; '' otherwise."""
    with np.errstate(invalid="ignore"):
        if np.all(got == 0) and not np.all(exp == 0):
            return "all zeros"
        if np.all(got == got[0]) and not np.all(exp == exp[0]):
            return f"constant ({_fmt(float(got[0]))})"
    return ""


def changed(name: str, before: np.ndarray, after: np.ndarray) -> str:
    """'' when byte-identical; otherwise what changed, for inputs that must stay const."""
    if len(before) == 0:
        return ""
    b = before.view(np.uint8).reshape(len(before), -1)
    a = after.view(np.uint8).reshape(len(after), -1)
    diff = np.flatnonzero((a != b).any(axis=1))
    if len(diff) == 0:
        return ""
    idx = ", ".join(str(int(i)) for i in diff[:MAX_SHOWN])
    return (
        f"input {name} was modified: {len(diff)} of {len(before)} elements changed (first at {idx})"
    )
