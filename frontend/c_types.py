"""The one table of C/CUDA scalar types: their width, whether they are floating point, the element
type name the GPU tests use for them (``f32``, ``u64`` …) and the PTX ``.param`` types a value of
each is passed as. The GPU tests add numpy storage and tolerances (gputest/dtypes.py); the
lowering loop asks how wide a kernel parameter's ``.param`` must be (``c_type_bits``).

(Named ``c_types``, not ``ctypes``, so it is never mistaken for the standard library module.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CType:
    name: str  # "f32": the spelling of annotations, reports and the GPU worker's protocol
    bits: int
    is_float: bool
    c_names: tuple[str, ...]  # C/CUDA spellings, words separated by one space
    ptx_types: tuple[str, ...]  # PTX .param types a scalar of this type may be passed as


C_TYPES: dict[str, CType] = {
    t.name: t
    for t in (
        CType("f64", 64, True, ("double",), (".f64", ".b64")),
        CType("f32", 32, True, ("float",), (".f32", ".b32")),
        CType("f16", 16, True, ("half", "__half"), (".f16", ".b16")),
        CType("bf16", 16, True, ("__nv_bfloat16", "nv_bfloat16", "bfloat16"), (".bf16", ".b16")),
        CType(
            "i64",
            64,
            False,
            ("long long", "long long int", "int64_t", "long", "long int", "ptrdiff_t"),
            (".s64", ".b64", ".u64"),
        ),
        CType(
            "u64",
            64,
            False,
            (
                "unsigned long long",
                "unsigned long long int",
                "uint64_t",
                "size_t",
                "unsigned long",
                "unsigned long int",
            ),  # fmt: skip
            (".u64", ".b64", ".s64"),
        ),
        CType(
            "i32",
            32,
            False,
            ("int", "int32_t", "signed int", "signed"),
            (".s32", ".b32", ".u32"),
        ),
        CType(
            "u32",
            32,
            False,
            ("unsigned int", "uint32_t", "unsigned"),
            (".u32", ".b32", ".s32"),
        ),
        CType("i16", 16, False, ("short", "short int", "int16_t"), (".s16", ".b16", ".u16")),
        CType(
            "u16",
            16,
            False,
            ("unsigned short", "unsigned short int", "uint16_t"),
            (".u16", ".b16", ".s16"),
        ),
        CType("i8", 8, False, ("signed char", "int8_t", "char"), (".s8", ".b8", ".u8")),
        CType("u8", 8, False, ("unsigned char", "uint8_t"), (".u8", ".b8", ".s8")),
    )
}

_BY_C_NAME = {c: t for t in C_TYPES.values() for c in t.c_names}
# Widths of types a kernel may take that have no element type for the GPU tests.
_OTHER_BITS = {"bool": 8}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict"}


def _base_words(c_type: str) -> str:
    return " ".join(w for w in re.findall(r"[\w:]+", c_type) if w not in _QUALIFIERS)


def element_type(c_type: str) -> CType | None:
    """The element type of a C/CUDA base type ('const float', 'unsigned int', 'int32_t')."""
    return _BY_C_NAME.get(_base_words(c_type))


def c_type_bits(c_type: str) -> int | None:
    """Width in bits of a kernel parameter of this C type as PTX passes it: 64 for any pointer;
    None when unknown (structs, templates, vector types)."""
    if "*" in c_type or "[" in c_type:
        return 64
    base = _base_words(c_type)
    found = _BY_C_NAME.get(base)
    return found.bits if found else _OTHER_BITS.get(base)


# PTX scalar types by width, from the table above (.u64/.s64/.b64/.f64 → 64, ..., .b8 → 8)
_PTX_TYPE_BITS = {p: t.bits for t in C_TYPES.values() for p in t.ptx_types}


def ptx_type_bits(ptx_type: str) -> int | None:
    """Width in bits of a PTX scalar type ('.u64' → 64, '.bf16' → 16); None for others
    (.pred, vectors, arrays)."""
    return _PTX_TYPE_BITS.get(ptx_type)
