"""The one PTX reader (ptxls.frontend.ptx): what every room asks of a PTX text, and that no
text, however broken, makes it raise."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ptxls.frontend.ptx import (
    entries_of,
    find_entries,
    module_globals,
    parse_ptx,
    provenance_source,
    ptx_target,
    ptx_version,
    with_version,
)

ROOT = Path(__file__).resolve().parent.parent

KERNELS = """\
// source: kernels/vec_add.cu
.version 8.0 // .version 9.9 in a comment does not count
.target sm_90a, texmode_independent
.address_size 64

.visible .global .align 4 .u32 count = 0;
.extern .global .u32 elsewhere;
.func (.param .b32 r) helper(.param .b32 x) { ret; }

// @gputest n: size
.visible .entry vec_add(
    .param .u64 .ptr .global .align 16 a,   // a pointer with its space and alignment
    .param .align 8 .b8 pair[16],           /* a struct by value */
    .param .u32 n
)
.maxntid 256, 1, 1
{
    .reg .b32 %r<4>;
    ld.param.u32 %r1, [n];
    ret;
}
.weak .entry
    split_header(.param .f32 x) { ret; }
"""


def test_entries_carry_lines_and_parameter_types():
    got = find_entries(KERNELS)
    assert [e.name for e in got] == ["vec_add", "split_header"]
    vec = got[0]
    assert (vec.line, vec.col, vec.decl_line) == (10, 16, 10)
    assert vec.param_types == (".u64", ".b8", ".u32")
    assert vec.param_names == ("a", "pair", "n")
    assert (got[1].line, got[1].decl_line) == (22, 21)  # the name on the line after .entry


def test_the_light_entry_scan_and_the_full_parse_agree():
    for path in sorted((ROOT / "fewshot" / "kernels").rglob("*.ptx")) + [ROOT / "examples"]:
        if path.is_dir():
            continue
        text = path.read_text()
        assert find_entries(text) == entries_of(parse_ptx(text)[0]), path


def test_params_keep_alignment_arrays_and_state_space():
    module, problems = parse_ptx(KERNELS)
    assert not problems
    entry = module.entries[0]
    a, pair, n = entry.params
    assert (a.type, a.align, a.state_space_hint) == (".u64", 16, ".global")
    assert (pair.type, pair.align, pair.array) == (".b8", 8, "[16]")
    assert n.type == ".u32" and n.array == ""
    assert entry.directives == {"maxntid": "256, 1, 1"}
    helper = module.functions[0]
    assert not helper.is_entry and [p.type for p in helper.return_params] == [".b32"]


def test_directives_and_header_comments():
    assert ptx_version(KERNELS) == (8, 0)
    assert ptx_target(KERNELS) == "sm_90a"
    assert ptx_target("// .target sm_80\n.version 8.0\n") is None
    assert provenance_source(KERNELS) == "kernels/vec_add.cu"
    lowered = with_version(KERNELS, (7, 8))
    assert ptx_version(lowered) == (7, 8) and ".version 9.9 in a comment" in lowered
    assert with_version(".target sm_90\n", (8, 0)) == ".target sm_90\n"


def test_module_globals_are_defined_ones_not_extern():
    assert module_globals(KERNELS) == ["count"]


def test_function_offsets_cut_out_the_whole_function():
    module, _ = parse_ptx(KERNELS)
    start, end = module.entries[0].offsets
    assert KERNELS[start:end].startswith(".entry vec_add(") and KERNELS[start:end].endswith("}")


@pytest.mark.parametrize("seed", range(4))
def test_no_text_makes_the_reader_raise(seed):
    rng = random.Random(seed)
    sources = [KERNELS] + [p.read_text() for p in sorted((ROOT / "examples").glob("*.ptx"))]
    for _ in range(150):
        base = rng.choice(sources)
        kind = rng.randrange(3)
        if kind == 0:  # truncated anywhere
            text = base[: rng.randrange(len(base) + 1)]
        elif kind == 1:  # random bytes, decoded as an editor would
            text = bytes(rng.randrange(256) for _ in range(rng.randrange(400))).decode(
                "utf-8", "replace"
            )
        else:  # spliced: a piece of one file dropped into another
            cut = rng.randrange(len(base) + 1)
            other = rng.choice(sources)
            a = rng.randrange(len(other) + 1)
            text = base[:cut] + other[a : a + rng.randrange(200)] + base[cut:]
        module, _ = parse_ptx(text)
        entries_of(module)
        find_entries(text)
        module_globals(text)
        ptx_version(text), ptx_target(text), provenance_source(text)
        with_version(text, (8, 0))
        for f in module.functions:
            for use in f.register_uses:
                use.span  # noqa: B018 - the lazy span is computed without error
