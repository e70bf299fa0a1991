"""frontend/triton.py: the @triton.jit reader and the build recipe (no triton needed)."""

from __future__ import annotations

import pytest

from ptxls.frontend.triton import read_triton
from ptxls.frontend.triton_build import build_recipe, resolve_signature

ADD = """import triton
import triton.language as tl


# ptxls: signature x_ptr=*fp32 y_ptr=*fp32 out_ptr=*fp32 n=i32 BLOCK=256
@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs), mask=offs < n)
"""


def test_reads_params_constexprs_directive_and_memory_roles():
    found = read_triton(ADD)
    (k,) = found.kernels
    assert (k.name, k.start_line, k.def_line, k.end_line) == ("add", 5, 6, 8)
    assert [p.name for p in k.params] == ["x_ptr", "y_ptr", "out_ptr", "n", "BLOCK"]
    assert [p.is_constexpr for p in k.params] == [False] * 4 + [True]
    assert k.directive.types == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    assert k.directive.values == {"BLOCK": 256}
    assert k.stored == {"out_ptr"} and k.loaded == {"x_ptr", "y_ptr"}
    assert set(k.free_names) == {"tl"}
    assert found.triton_imports == {"triton": ("triton", ""), "tl": ("triton.language", "")}


def test_recipe_holds_only_the_defs_at_their_lines():
    found = read_triton(ADD)
    build, problems = build_recipe(found, ADD, "add", file_name="k.py")
    assert problems == [] and build is not None
    lines = build.source.splitlines()
    assert lines[6].startswith("def add(") and all(not ln for ln in lines[:6])  # decorator gone
    assert "import" not in build.source and "ptxls:" not in build.source
    assert build.signature == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                               "n": "i32", "BLOCK": "constexpr"}  # fmt: skip
    assert build.constexprs == {"BLOCK": 256} and build.imports == {"tl": ("triton.language", "")}


ODD = """
from triton import jit
import triton
import triton.language as tl
import numpy as np

SCALE = 2.0
LIMIT = tl.constexpr(64)
TABLE = np.arange(4)


@jit
def plain(x):
    return x * SCALE


@triton.jit(do_not_specialize=["n"])
def nospec(p, n: int, BLOCK: tl.constexpr = 128):
    tl.store(p + tl.arange(0, BLOCK), plain(n) + LIMIT)


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2),
                          triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
@triton.jit
def tuned(p: tl.pointer_type(tl.float16), n, BLOCK: tl.constexpr):
    tl.store(p + tl.arange(0, BLOCK), 1.0)


@triton.jit
def uses_table(p):
    tl.store(p, TABLE[0])


class Holder:
    @triton.jit
    def inner(p):
        pass
"""


def test_odd_decorators_and_module_names():
    found = read_triton(ODD)
    names = {k.name: k for k in found.kernels}
    assert set(names) == {"plain", "nospec", "tuned", "uses_table", "inner"}
    assert names["nospec"].jit_options == {"do_not_specialize": ["n"]}
    assert names["nospec"].param("BLOCK").default == 128
    assert [c.kwargs for c in names["tuned"].autotune] == [{"BLOCK": 64}, {"BLOCK": 128}]
    assert names["inner"].nested and not names["tuned"].nested
    assert found.constants["SCALE"] == (2.0, False, 6) and found.constants["LIMIT"][:2] == (
        64,
        True,
    )
    assert "TABLE" in found.other_globals and "np" in found.other_globals


def test_signature_from_annotations_defaults_and_the_first_autotune_config():
    found = read_triton(ODD)
    sig = resolve_signature(found.kernel("nospec"))
    assert sig.types == {"n": "i32"} and sig.constexprs == {"BLOCK": 128} and sig.missing == ["p"]
    sig = resolve_signature(found.kernel("tuned"), {"n": "i32"})
    assert sig.types == {"p": "*fp16", "n": "i32"} and sig.constexprs == {"BLOCK": 64}
    assert sig.options == {"num_warps": 2} and "first config" in sig.notes[0]


def test_helpers_and_literal_constants_travel_with_the_kernel():
    text = ODD.replace("def nospec(p,", "# ptxls: signature p=*fp32\n@triton.jit\ndef nospec_(p,")
    text = ODD.replace('@triton.jit(do_not_specialize=["n"])',
                       '# ptxls: signature p=*fp32\n@triton.jit(do_not_specialize=["n"])')  # fmt: skip
    build, problems = build_recipe(read_triton(text), text, "nospec")
    assert problems == [], problems
    assert build.functions == ["nospec", "plain"]
    assert build.constants == {"SCALE": (2.0, False), "LIMIT": (64, True)}
    assert "def plain(" in build.source and "def tuned(" not in build.source


def test_refusals_say_what_to_change():
    found = read_triton(ODD)
    _, problems = build_recipe(found, ODD, "uses_table")
    assert "module-level name 'TABLE'" in problems[0].message
    assert "never runs the file" in problems[0].message
    _, problems = build_recipe(found, ODD, "inner")
    assert "inside a class or function" in problems[0].message
    _, problems = build_recipe(found, ODD, "nope")
    assert "no @triton.jit function 'nope'" in problems[0].message


def test_missing_types_are_asked_for_with_the_line_to_add():
    text = ADD.replace("# ptxls: signature x_ptr=*fp32 y_ptr=*fp32 out_ptr=*fp32 n=i32 BLOCK=256\n",
                       "")  # fmt: skip
    _, problems = build_recipe(read_triton(text), text, "add")
    (p,) = problems
    assert "x_ptr, y_ptr, out_ptr, n, BLOCK" in p.message
    assert p.message.endswith(
        "# ptxls: signature x_ptr=*fp32 y_ptr=*fp32 out_ptr=*fp32 n=i32 BLOCK=1024"
    )
    assert p.line == 4  # the decorator's line: the directive goes right above it


@pytest.mark.parametrize(
    "item, words",
    [("x_ptr=*fp33", "neither a Triton type"), ("BLOCK=i32", "is a tl.constexpr"),
     ("nope=i32", "not a parameter"), ("num_warps=0", "positive int"), ("x_ptr", "NAME=TYPE")],
)  # fmt: skip
def test_directive_mistakes_are_problems(item, words):
    text = ADD.replace("# ptxls: signature x_ptr", f"# ptxls: signature {item} x_ptr")
    _, problems = build_recipe(read_triton(text), text, "add")
    assert any(words in p.message for p in problems), problems


@pytest.mark.parametrize(
    "text",
    ["", "\0", "@triton.jit\ndef broken(x:\n    pass\n", "(" * 200_000, "x = 1 +" * 1000,
     "@triton.jit\n", "\ufeff\xff\xfe", "@jit\ndef f(:\n  pass", "def f(*, a=1, **kw): pass"],
)  # fmt: skip
def test_never_raises(text):
    found = read_triton(text)
    for k in found.kernels:
        build_recipe(found, text, k.name)


def test_a_file_mid_edit_still_lists_its_kernels():
    text = ADD + "\n@triton.jit\ndef half_typed(x,\n"
    found = read_triton(text)
    assert found.syntax_error
    assert [k.name for k in found.kernels] == ["add", "half_typed"]  # a line scan
    _, problems = build_recipe(found, text, "add")
    assert "does not parse" in problems[0].message


def test_a_value_only_heuristics_would_compute_is_asked_for():
    text = ADD.replace("@triton.jit", '@triton.heuristics({"BLOCK": lambda a: 64})\n@triton.jit')
    text = text.replace(" BLOCK=256", "")
    (k,) = read_triton(text).kernels
    assert k.has_heuristics and k.start_line == 5
    _, problems = build_recipe(read_triton(text), text, "add")
    assert "@triton.heuristics computes values" in problems[0].message
    assert problems[0].message.endswith("BLOCK=1024")
