"""Element types the harness knows: how they are stored on the host, poisoned, generated and
compared. Which C types there are, and their widths, is ``ptxls.frontend.c_types``.

numpy has no bfloat16, so bf16 travels as its raw 16-bit pattern (uint16) and is widened to
float32 by a shift when values are needed. Everything else maps onto a numpy dtype directly.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ptxls.frontend.c_types import C_TYPES, element_type

if TYPE_CHECKING:
    import numpy as np

# numpy is imported by the functions that use it, not here: reading a test spec (the table
# below) needs no numpy, and `ptxls lower` reads the spec before its first request, where
# numpy's import would be a fifth of the start-up (bench/lowering_startup.py).


@dataclass(frozen=True)
class DType:
    name: str  # "f32": the spelling used in annotations, reports and the worker protocol
    storage: str  # numpy dtype the bytes are held in on the host
    is_float: bool
    rtol: float  # default relative tolerance against a float64 (or nvcc) reference
    cuda_names: tuple[str, ...]  # C/CUDA spellings that map here
    ptx_types: tuple[str, ...]  # PTX .param types a scalar of this type is passed as
    # For a type numpy has no dtype for (bf16), held as its bit pattern in ``storage``: float32
    # values -> bits, bits -> float32 values, and the bits of the poison (a NaN no arithmetic
    # produces). None for the rest, which numpy holds as themselves.
    encode: Callable[[np.ndarray], np.ndarray] | None = None
    decode: Callable[[np.ndarray], np.ndarray] | None = None
    poison_bits: int | None = None

    @property
    def itemsize(self) -> int:
        import numpy as np

        return np.dtype(self.storage).itemsize


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    import numpy as np

    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(values: np.ndarray) -> np.ndarray:
    """Round to nearest even, as __float2bfloat16 does (NaN stays NaN)."""
    import numpy as np

    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    nan = np.isnan(values)
    out[nan] = 0x7FC0
    return out


@dataclass(frozen=True)
class _Host:
    storage: str
    rtol: float
    encode: Callable[[np.ndarray], np.ndarray] | None = None
    decode: Callable[[np.ndarray], np.ndarray] | None = None
    poison_bits: int | None = None


# How each C type of ptxls.frontend.c_types is held on the host, and its default tolerance: the
# one row a new element type adds here (its C names and widths are its row in c_types).
# f16/bf16 kernels often compute in f32 and round once; a few ulps is still right.
_HOST = {
    "f64": _Host("float64", 1e-12),
    "f32": _Host("float32", 1e-5),
    "f16": _Host("float16", 2e-3),
    "bf16": _Host("uint16", 1.6e-2, f32_to_bf16, bf16_to_f32, 0x7FC1),
    "i64": _Host("int64", 0.0),
    "u64": _Host("uint64", 0.0),
    "i32": _Host("int32", 0.0),
    "u32": _Host("uint32", 0.0),
    "i16": _Host("int16", 0.0),
    "u16": _Host("uint16", 0.0),
    "i8": _Host("int8", 0.0),
    "u8": _Host("uint8", 0.0),
}

DTYPES: dict[str, DType] = {
    c.name: DType(
        c.name,
        (h := _HOST[c.name]).storage,
        c.is_float,
        h.rtol,
        c.c_names,
        c.ptx_types,
        h.encode,
        h.decode,
        h.poison_bits,
    )
    for c in C_TYPES.values()
}


def dtype(name: str) -> DType:
    """The DType for an annotation spelling; KeyError names the known ones."""
    try:
        return DTYPES[name]
    except KeyError:
        raise KeyError(f"unknown element type '{name}' (known: {', '.join(DTYPES)})") from None


def from_cuda(type_name: str) -> DType | None:
    """Map a C/CUDA base type ('const float', 'unsigned int', 'int32_t') to a DType."""
    found = element_type(type_name)
    return DTYPES[found.name] if found else None


def to_float64(dt: DType, raw: np.ndarray) -> np.ndarray:
    """Values as float64 for references and error measures (ints too: they fit)."""
    import numpy as np

    if dt.decode is not None:
        return dt.decode(raw).astype(np.float64)
    return raw.astype(np.float64)


def from_float64(dt: DType, values: np.ndarray) -> np.ndarray:
    """Round float64 reference values to the storage type (ints wrap like C casts do)."""
    import numpy as np

    if dt.encode is not None:
        return dt.encode(values.astype(np.float32))
    if dt.is_float:
        return values.astype(dt.storage)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(values, dtype=np.float64).astype(np.int64).astype(dt.storage)


def poison(dt: DType, count: int) -> np.ndarray:
    """What an output holds before the launch: NaN for floats, 0xA5 bytes for integers. An
    element still equal to this afterwards was not written."""
    import numpy as np

    if dt.poison_bits is not None:
        return np.full(count, dt.poison_bits, dtype=dt.storage)
    if dt.is_float:
        return np.full(count, np.nan, dtype=dt.storage)
    return np.full(count * dt.itemsize, 0xA5, dtype=np.uint8).view(dt.storage)


# From this many elements, floats are drawn in fixed chunks on threads (numpy's generators and
# ufuncs release the GIL): 2 x 16M float32 took 0.19 s of a warm vec_add test on the H200 host
# when drawn in one call. Each chunk has its own generator seeded by (one number drawn from the
# case's generator, chunk index): the values depend on the seed alone, not on the thread count.
PARALLEL_DRAW_MIN = 1 << 20
_CHUNK = 1 << 20
_POOL: ThreadPoolExecutor | None = None


def _draw_in_chunks(count: int, draw, base: int) -> np.ndarray:
    """``count`` uniform values in [-1, 1) of float type ``draw``."""
    import numpy as np

    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(min(16, os.cpu_count() or 1), thread_name_prefix="inputs")
    v = np.empty(count, draw)

    def fill(k: int) -> None:
        part = v[k * _CHUNK : (k + 1) * _CHUNK]
        np.random.default_rng([base, k]).random(len(part), dtype=draw, out=part)
        part *= 2
        part -= 1

    list(_POOL.map(fill, range((count + _CHUNK - 1) // _CHUNK)))
    return v


def random_values(dt: DType, count: int, rng: np.random.Generator) -> np.ndarray:
    """Fresh inputs: floats in [-1, 1) (never all zero, so a kernel that ignores an input shows),
    small integers so sums and products of a few inputs stay in range."""
    import numpy as np

    if dt.is_float:
        # Generated in the narrowest float numpy draws directly (float32 is 3x faster at 16M).
        draw = np.float64 if dt.name == "f64" else np.float32
        if count >= PARALLEL_DRAW_MIN:
            v = _draw_in_chunks(count, draw, int(rng.integers(2**63)))
        else:
            v = rng.random(count, dtype=draw)
            v *= 2
            v -= 1
        if dt.encode is not None:
            return dt.encode(v)
        return v.astype(dt.storage, copy=False)
    info = np.iinfo(dt.storage)
    lo, hi = max(info.min, -100), min(info.max, 100)
    return rng.integers(lo, hi, count, endpoint=True).astype(dt.storage)
