"""Independent oracles for the semantics tests: exact rational arithmetic (fractions) and
rounding written from IEEE 754's definitions, one Python value at a time. Nothing here imports
the emulator, so a test that compares the two compares two separate implementations."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

# (precision incl. hidden bit, smallest normal exponent, largest finite, has infinities)
FORMATS = {
    "f64": (53, -1022, Fraction((2**53 - 1) * 2**971), True),
    "f32": (24, -126, Fraction((2**24 - 1) * 2**104), True),
    "f16": (11, -14, Fraction(65504), True),
    "bf16": (8, -126, Fraction((2**8 - 1) * 2**120), True),
    "tf32": (11, -126, Fraction((2**11 - 1) * 2**117), True),
}


def floor_log2(a: Fraction) -> int:
    """floor(log2(a)) for a > 0, exactly."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    elif Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def round_fraction(v: Fraction, fmt: str, mode: str) -> float:
    """The IEEE 754 result of rounding the exact rational v to ``fmt`` under ``mode``
    (rn: nearest-even, rna: nearest-away, rz, rm, rp), as a Python float (±inf on overflow as
    the mode says). The sign of a zero result is v's sign."""
    p, emin, maxf, _ = FORMATS[fmt]
    if v == 0:
        return 0.0
    neg = v < 0
    a = -v if neg else v
    e = max(floor_log2(a), emin)
    q = Fraction(2) ** (e - p + 1)
    n = a / q
    fl = n.numerator // n.denominator
    rem = n - fl
    # directions in terms of magnitude: "up" = away from zero
    if rem == 0:
        up = False
    elif mode == "rn":
        up = rem > Fraction(1, 2) or (rem == Fraction(1, 2) and fl % 2 == 1)
    elif mode == "rna":
        up = rem >= Fraction(1, 2)
    elif mode == "rz":
        up = False
    elif mode == "rp":
        up = not neg
    elif mode == "rm":
        up = neg
    else:
        raise ValueError(mode)
    r = (fl + (1 if up else 0)) * q
    if r > maxf:
        away = mode in ("rn", "rna") or (mode == "rp" and not neg) or (mode == "rm" and neg)
        r_f = math.inf if away else float(maxf)
    else:
        r_f = float(r)  # exact: r is representable in fmt ⊂ f64
    return -r_f if neg else r_f


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def bits_f32(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b))[0]


def bits_f64(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b))[0]
