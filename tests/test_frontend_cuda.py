"""The one CUDA kernel-signature reader (ptxls.frontend.cuda), used by the GPU tests and by the
lowering loop. The cases are the ones where their two regexes had drifted apart; each says what
the old readers answered."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ptxls.frontend.cuda import find_kernels, parse_params
from ptxls.lowering.sources import cuda_kernels

ROOT = Path(__file__).resolve().parent.parent


def sig(params: str) -> list[tuple[str, str, str, bool, bool]]:
    return [(p.name, p.c_type, p.base_type, p.is_pointer, p.is_const) for p in parse_params(params)]


def test_template_arguments_with_commas_stay_one_parameter():
    # lowering split at every comma: "Pair<int" and "float> p" were two parameters
    src = "template <typename T, int N>\n__global__ void k(Pair<int, float> p, T* x, int n)\n{ }\n"
    (k,) = find_kernels(src)
    assert [p.name for p in k.params] == ["p", "x", "n"]
    assert k.params[0].base_type == "Pair<int, float>" and k.is_template and k.decl_line == 0
    (lowered,) = cuda_kernels(src)
    assert [p.name for p in lowered.params] == ["p", "x", "n"]
    assert lowered.notes == ["templated kernel: the PTX must be for one instantiation"]
    assert lowered.text.startswith("template <typename T, int N>")


@pytest.mark.parametrize(
    "head",
    [
        "__global__ void __launch_bounds__(256, 2) k",
        "__global__ __launch_bounds__(256) void k",
        "__global__ void __launch_bounds__(BLOCK * (2)) k",  # nested parentheses
        "static inline __global__ void k",  # lowering took "static" only, not "inline"
        "__global__ static inline void k",
        "__global__ __attribute__((noinline)) void k",  # neither reader knew attributes
        "[[deprecated]] __global__ void k",
        'extern "C" __global__ void k',
        "__global__ void __cluster_dims__(2, 1, 1) k",
    ],
)
def test_specifiers_and_attributes_around_the_name(head):
    src = f"{head}(float* a, int n) {{ a[0] = n; }}\n"
    (k,) = find_kernels(src)
    assert k.name == "k" and [p.name for p in k.params] == ["a", "n"]
    assert [s.name for s in cuda_kernels(src)] == ["k"]


def test_comments_strings_and_char_literals_change_nothing():
    src = (
        "// __global__ void commented(int x) {}\n"
        "/* __global__ void also_commented(int x) {} */\n"
        "#define KERNEL __global__ void\n"
        "__global__ void k(float* a /* the input, really */, // trailing words\n"
        "                  int n)\n"
        "{\n"
        "    char c = '}';  const char* s = \"}{\";\n"
        "    a[0] = c;\n"
        "}\n"
        "__global__ void after(int m) { }\n"
    )
    kernels = find_kernels(src)
    assert [k.name for k in kernels] == ["k", "after"]
    assert [p.name for p in kernels[0].params] == ["a", "n"]
    assert (kernels[0].line, kernels[0].end_line) == (3, 8)  # the body ends at its own '}'


def test_default_arguments_with_calls_and_commas():
    # both readers stopped the parameter list at the first ')', inside "f(1, 2)"
    src = "__global__ void k(float* a, int n = f(1, 2), float s = 0.5f) { }\n"
    (k,) = find_kernels(src)
    assert [(p.name, p.default) for p in k.params] == [("a", ""), ("n", "f(1, 2)"), ("s", "0.5f")]


def test_pointers_const_and_restrict():
    assert sig(
        "const float* __restrict__ a, float const* b, float* const c, volatile int* d, "
        "float e[], unsigned int n, const int* __restrict f"
    ) == [
        ("a", "const float*", "float", True, True),
        ("b", "float const*", "float", True, True),
        ("c", "float* const", "float", True, False),  # a const pointer to data it writes
        ("d", "volatile int*", "int", True, False),
        ("e", "float*", "float", True, False),
        ("n", "unsigned int", "unsigned int", False, False),
        ("f", "const int*", "int", True, True),  # lowering kept "__restrict" in the type
    ]


def test_unnamed_parameters_keep_their_place():
    # the GPU test's reader dropped "float*" and named "unsigned int" 'int' with no type
    assert sig("float*, unsigned int, void*") == [
        ("arg0", "float*", "float", True, False),
        ("arg1", "unsigned int", "unsigned int", False, False),
        ("arg2", "void*", "void", True, False),
    ]
    assert sig("void") == [] and sig("") == []


def test_multi_line_signature_and_lines():
    src = (
        "#include <cuda_runtime.h>\n"
        "\n"
        "template <int BLOCK>\n"
        "__global__\n"
        "void\n"
        "scale(\n"
        "    const float* __restrict__ x,\n"
        "    float* __restrict__ y,\n"
        "    int n)\n"
        "{\n"
        "    y[0] = x[0];\n"
        "}\n"
    )
    (k,) = find_kernels(src)
    assert (k.name, k.line, k.col, k.decl_line, k.end_line) == ("scale", 5, 0, 2, 11)
    assert [(p.name, p.c_type) for p in k.params] == [
        ("x", "const float*"),
        ("y", "float*"),
        ("n", "int"),
    ]
    (lowered,) = cuda_kernels(src)
    assert (lowered.start_line, lowered.end_line) == (2, 11)


def test_a_declared_and_defined_kernel_is_listed_once():
    # the GPU test's reader listed both (two code lenses for one kernel)
    src = "__global__ void k(float* a);\n__global__ void only_declared(int n);\n\n__global__ void k(float* a) { a[0] = 1; }\n"
    kernels = find_kernels(src)
    assert [(k.name, k.is_definition, k.line) for k in kernels] == [
        ("only_declared", False, 1),
        ("k", True, 3),
    ]
    assert [s.name for s in cuda_kernels(src)] == ["k"]  # nothing to lower in a declaration


@pytest.mark.parametrize("seed", range(3))
def test_no_text_makes_the_reader_raise(seed):
    rng = random.Random(seed)
    sources = [p.read_text() for p in sorted(ROOT.glob("examples/**/*.cu"))]
    sources.append("template <typename T> __global__ void k(Pair<int, (float> p, T* x = f(1, ")
    for _ in range(200):
        base = rng.choice(sources)
        if rng.random() < 0.5:
            text = base[: rng.randrange(len(base) + 1)]
        else:
            text = bytes(rng.randrange(256) for _ in range(rng.randrange(300))).decode(
                "utf-8", "replace"
            )
            text = text.replace("\ufffd", rng.choice(["__global__ ", "(", ")", "{", "<", "'"]))
        for k in find_kernels(text):
            assert k.name and k.offsets[0] <= k.offsets[1] <= len(text)
        cuda_kernels(text)
