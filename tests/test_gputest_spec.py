"""Test specs without a GPU: inference from CUDA signatures, @gputest annotations and their
errors, pairing a .ptx with its CUDA source, and the checks against the PTX entry's ABI."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptxls.gputest import exprs
from ptxls.gputest.api import infer_spec_from_cuda, spec_for_ptx
from ptxls.gputest.launch import launch_dims, scalar_env
from ptxls.gputest.spec import DEFAULT_SIZES, TestSpec

ROOT = Path(__file__).resolve().parent.parent


def roles(spec: TestSpec) -> list[tuple[str, str, str]]:
    return [(p.name, p.role, p.dtype) for p in spec.params]


@pytest.mark.parametrize(
    "signature, expected",
    [
        ("const float* a, const float* b, float* c, int n",
         [("a", "in", "f32"), ("b", "in", "f32"), ("c", "out", "f32"), ("n", "size", "i32")]),
        ("const double* __restrict__ x, double* __restrict__ y, size_t N",
         [("x", "in", "f64"), ("y", "out", "f64"), ("N", "size", "u64")]),
        ("const __half* x, __half* y, unsigned int count",
         [("x", "in", "f16"), ("y", "out", "f16"), ("count", "size", "u32")]),
        ("const __nv_bfloat16 *x, __nv_bfloat16 *y, int len",
         [("x", "in", "bf16"), ("y", "out", "bf16"), ("len", "size", "i32")]),
        ("const int8_t* q, const uint8_t* z, int32_t* out, long long size",
         [("q", "in", "i8"), ("z", "in", "u8"), ("out", "out", "i32"), ("size", "size", "i64")]),
        ("float* const y, const float alpha, int n",  # const pointer, non-const data: output
         [("y", "out", "f32"), ("alpha", "scalar", "f32"), ("n", "size", "i32")]),
        ("unsigned char *img, const unsigned int *lut, uint32_t numel",
         [("img", "out", "u8"), ("lut", "in", "u32"), ("numel", "size", "u32")]),
        ("const float x[], float y[], int n",
         [("x", "in", "f32"), ("y", "out", "f32"), ("n", "size", "i32")]),
    ],
)  # fmt: skip
def test_roles_and_types_inferred_from_signature(signature, expected):
    spec, problems = infer_spec_from_cuda(f"__global__ void k({signature}) {{}}", "k")
    assert problems == []
    assert roles(spec) == expected
    assert spec.launch.grid == "ceil(n/256)" and spec.launch.block == "256"
    assert list(spec.sizes) == list(DEFAULT_SIZES)


def test_default_sizes_break_lazy_kernels():
    sizes = list(DEFAULT_SIZES)
    assert len(sizes) >= 5 and 0 in sizes and 1 in sizes and 255 in sizes and 257 in sizes
    assert any(s % 256 and s > 257 for s in sizes) and max(sizes) >= 1 << 20


def test_float_scalar_gets_a_default_and_says_so_int_scalar_needs_a_value():
    spec, problems = infer_spec_from_cuda("__global__ void k(float* y, float a, int n) {}", "k")
    assert not problems and spec.param("a").value == "1.25"
    assert any("a = 1.25" in o for o in spec.origin)
    spec, problems = infer_spec_from_cuda("__global__ void k(float* y, int n, int stride) {}", "k")
    assert [p.message for p in problems] == [
        "scalar parameter 'stride' has no value: annotate it, e.g. '// @gputest stride: i32 = 2'"
    ]


def test_kernel_forms_found_templates_launch_bounds_extern_c_and_comments():
    src = """
// __global__ void commented_out(float* x) {}
extern "C" __global__ void __launch_bounds__(256) plain(const float* x, float* y, int n) {}
template <typename T>
__global__ void templ(const float* x, float* y, int n) {}
"""
    assert infer_spec_from_cuda(src, "plain")[1] == []
    assert infer_spec_from_cuda(src, "templ")[1] == []
    spec, problems = infer_spec_from_cuda(src, "commented_out")
    assert (
        spec is None
        and "no __global__ kernel 'commented_out' (kernels here: plain, templ)"
        in problems[0].message
    )


def test_unknown_type_and_no_output_are_reported():
    _, problems = infer_spec_from_cuda(
        "__global__ void k(const float2* x, float* y, int n) {}", "k"
    )
    assert "cannot test type 'float2'" in problems[0].message
    _, problems = infer_spec_from_cuda("__global__ void k(const float* x, int n) {}", "k")
    assert "has no output pointer" in problems[0].message


ANNOTATED = """\
// saxpy with a scalar and a custom launch
// @gputest y: inout f32[n]; alpha: f32 = 2.5
// @gputest launch: grid=cdiv(n, 512), 1 block=512 shared=0
// @gputest sizes: 0 1 511 513 1<<20
// @gputest ref: y = alpha * x + y
// @gputest tol: 1e-6; seed: 42; runs: 25
__global__ void saxpy(const float* x, float* y, float alpha, int n) {}
"""


def test_annotation_overrides_roles_launch_sizes_reference_and_tolerance():
    spec, problems = infer_spec_from_cuda(ANNOTATED, "saxpy")
    assert problems == []
    assert roles(spec) == [
        ("x", "in", "f32"),
        ("y", "inout", "f32"),
        ("alpha", "scalar", "f32"),
        ("n", "size", "i32"),
    ]
    assert spec.param("alpha").value == "2.5"
    assert spec.sizes == [0, 1, 511, 513, 1 << 20]
    assert spec.numpy_ref == "y = alpha * x + y"
    assert (spec.tol, spec.seed, spec.timing_runs) == (1e-6, 42, 25)
    grid, block, shared = launch_dims(spec, scalar_env(spec, 1000))
    assert (grid, block, shared) == ((2, 1, 1), (512, 1, 1), 0)
    # n = 0 still launches one block, so a missing bounds check shows in the guard band
    assert launch_dims(spec, scalar_env(spec, 0))[0] == (1, 1, 1)


@pytest.mark.parametrize(
    "line, message, column_of",
    [
        ("// @gputest y: outt f32[n]", "cannot read 'y: outt f32[n]': write 'in|out|inout TYPE[LEN]', 'size', or 'TYPE = VALUE'", "y: outt"),
        ("// @gputest y: out f33[n]", "unknown type 'f33' (known: f64, f32, f16, bf16, i64, u64, i32, u32, i16, u16, i8, u8)", "y: out f33"),
        ("// @gputest z: out f32[n]", "'z' is not a parameter of k (its parameters: x, y, n)", "z: out"),
        ("// @gputest y: out f32[m]", "unknown name 'm' in 'm' (known: n, y)", "y: out f32[m]"),
        ("// @gputest sizes: 1 two 3", "unknown name 'two' in 'two'", "sizes:"),
        ("// @gputest launch: threads=256", "'launch: threads=256' should read 'launch: grid=EXPR block=EXPR [shared=EXPR]'", "launch:"),
        ("// @gputest ref: y + 1", "'ref: y + 1' needs an assignment to an output, e.g. 'ref: c = a + b'", "ref:"),
        ("// @gputest launch: grid=__import__('os') block=1", "unknown name '__import__'", "launch:"),
        ("// @gputest justtext", "'justtext' is not 'NAME: ...'", "justtext"),
    ],
)  # fmt: skip
def test_annotation_errors_point_at_the_item(line, message, column_of):
    src = f"// first line\n{line}\n__global__ void k(const float* x, float* y, int n) {{}}\n"
    spec, problems = infer_spec_from_cuda(src, "k")
    assert len(problems) == 1, problems
    p = problems[0]
    assert message in p.message and p.message.startswith("@gputest: ")
    assert p.line == 1 and p.col == line.index(column_of)
    assert p.end_col > p.col
    assert spec is not None  # the rest of the spec still stands


def test_annotation_must_touch_the_kernel():
    src = "// @gputest sizes: 1 2 3\n\n__global__ void k(const float* x, float* y, int n) {}\n"
    spec, _ = infer_spec_from_cuda(src, "k")
    assert spec.sizes == list(DEFAULT_SIZES)


def test_expressions_are_arithmetic_only():
    assert exprs.evaluate_int("ceil(n/256)", {"n": 257}) == 2
    assert exprs.evaluate_int("cdiv(n, 256) * 2 + (1 << 3)", {"n": 513}) == 14
    for bad in [
        "__import__('os').system('true')",
        "n.__class__",
        "[1, 2]",
        "lambda: 1",
        "open('x')",
    ]:
        with pytest.raises(exprs.ExprError):
            exprs.evaluate(bad, {"n": 1})
    assert exprs.split_dims("cdiv(n, 256), 4") == ["cdiv(n, 256)", "4"]


VEC_ADD_PTX = (ROOT / "examples" / "vec_add.ptx").read_text()


def test_ptx_takes_its_spec_from_the_cu_beside_it():
    res = spec_for_ptx(VEC_ADD_PTX, "vec_add", ptx_path=str(ROOT / "examples" / "vec_add.ptx"))
    assert res.ok, res.problems
    assert Path(res.reference_path).name == "vec_add.cu"
    assert roles(res.spec) == [
        ("a", "in", "f32"),
        ("b", "in", "f32"),
        ("c", "out", "f32"),
        ("n", "size", "i32"),
    ]


def test_ptx_takes_its_spec_from_the_provenance_header(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "kernels.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    out = tmp_path / "build" / "lowered.ptx"
    out.parent.mkdir()
    out.write_text("// Generated by ptxls lower\n// source: src/kernels.cu\n" + VEC_ADD_PTX)
    res = spec_for_ptx(out.read_text(), "vec_add", ptx_path=str(out))
    assert res.ok, res.problems
    assert res.reference_path == str((tmp_path / "src" / "kernels.cu").resolve())


def test_ptx_annotation_alone_is_a_spec_and_wins_over_the_pair(tmp_path):
    text = VEC_ADD_PTX.replace(
        ".visible .entry vec_add(",
        "// @gputest a: in f32[n]; b: in f32[n]; c: out f32[n]; n: size\n// @gputest ref: c = a + b\n.visible .entry vec_add(",
    )
    res = spec_for_ptx(text, "vec_add", ptx_path=str(tmp_path / "alone.ptx"))
    assert res.ok, res.problems
    assert res.reference_source is None and res.spec.numpy_ref == "c = a + b"
    res = spec_for_ptx(text.replace("// @gputest ref: c = a + b\n", "// @gputest sizes: 3 4 5 6 7\n"),
                       "vec_add", ptx_path=str(ROOT / "examples" / "vec_add.ptx"))  # fmt: skip
    assert res.ok and res.spec.sizes == [3, 4, 5, 6, 7] and res.reference_source is not None


def test_ptx_without_pair_or_annotation_says_how_to_give_a_spec(tmp_path):
    res = spec_for_ptx(VEC_ADD_PTX, "vec_add", ptx_path=str(tmp_path / "lonely.ptx"))
    assert res.spec is None
    [p] = res.problems
    assert p.message.startswith("no test spec for 'vec_add': pair it with a CUDA source")
    assert VEC_ADD_PTX.splitlines()[p.line][p.col : p.end_col] == "vec_add"
    assert (
        spec_for_ptx(VEC_ADD_PTX, "nope").problems[0].message
        == "no .entry 'nope' in the PTX (entries: vec_add)"
    )


def test_spec_that_disagrees_with_the_entry_abi_is_refused():
    cu = "__global__ void vec_add(const float* a, const float* b, float* c, long long n) {}"
    res = spec_for_ptx(VEC_ADD_PTX, "vec_add", reference_cuda=cu)
    assert [p.message for p in res.problems] == [
        "parameter 3 ('n') is i64 (8 bytes) in the spec but .u32 in .entry vec_add"
    ]
    cu = "__global__ void vec_add(const float* a, float* c, int n) {}"
    res = spec_for_ptx(VEC_ADD_PTX, "vec_add", reference_cuda=cu)
    assert (
        "the spec has 3 parameters (a, c, n) but .entry vec_add takes 4" in res.problems[0].message
    )


def test_every_bad_example_kernel_resolves_its_spec_through_its_header():
    for ptx in sorted((ROOT / "examples" / "gpu" / "bad").glob("*.ptx")):
        res = spec_for_ptx(ptx.read_text(), "vec_add", ptx_path=str(ptx))
        assert res.ok, (ptx.name, res.problems)
        assert Path(res.reference_path).resolve() == (ROOT / "examples" / "vec_add.cu").resolve()


def test_spec_round_trips_through_json_dicts():
    spec, _ = infer_spec_from_cuda(ANNOTATED, "saxpy")
    assert TestSpec.from_dict(spec.to_dict()) == spec


def test_sidecar_file_supplies_a_spec_and_its_errors_point_into_it(tmp_path):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(VEC_ADD_PTX)
    side = tmp_path / "k.gputest"
    side.write_text(
        "# specs for k.ptx\n[other]\n  x: nonsense\n[vec_add]\n"
        "  a: in f32[n]; b: in f32[n]; c: out f32[n]; n: size\n  ref: c = a + b   # numpy\n"
    )
    res = spec_for_ptx(ptx.read_text(), "vec_add", ptx_path=str(ptx))
    assert res.ok, res.problems
    assert res.spec.numpy_ref == "c = a + b" and res.spec.origin == [f"sidecar {side} (line 5)"]
    side.write_text("[vec_add]\n  a: in f32[n]; b: in f33[n]; c: out f32[n]; n: size\n")
    [p] = spec_for_ptx(ptx.read_text(), "vec_add", ptx_path=str(ptx)).problems
    assert p.file == str(side) and p.line == 1 and "unknown type 'f33'" in p.message
    assert side.read_text().splitlines()[1][p.col : p.end_col] == "b: in f33[n]"


def test_isa_above_the_driver_jit_is_explained():
    from ptxls.gputest.api import isa_notes

    h200 = {"max_ptx_isa": [9, 0], "driver_cuda": "13.0"}
    assert isa_notes((8, 0), h200, "cubin from ptxas 13.0") == []
    [cubin] = isa_notes((9, 5), h200, "cubin from ptxas 13.5 -arch=sm_90")
    assert (
        "above the 9.0 that this driver (CUDA 13.0) can JIT; it ran because ptxas assembled it"
        in cubin
    )
    [jit] = isa_notes((9, 5), h200, "PTX through the driver JIT")
    assert "can JIT only up to 9.0: use a ptxas that takes 9.5" in jit


@pytest.mark.parametrize(
    "named",
    [
        "{outside}/kernels.cu",
        "../outside/kernels.cu",
        "src/../../outside/kernels.cu",
        "outside/kernels.cu",
    ],
)
def test_a_provenance_header_cannot_reach_outside_its_project(tmp_path, named):
    """A file names its own pair: it may not make the GPU test read a .cu of another project."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "kernels.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "build").mkdir()
    out = project / "build" / "lowered.ptx"
    header = named.format(outside=tmp_path / "outside")
    out.write_text(f"// source: {header}\n" + VEC_ADD_PTX)
    res = spec_for_ptx(out.read_text(), "vec_add", ptx_path=str(out))
    assert res.reference_path is None, res.reference_path
    # the same name, inside the project, is found
    (project / "outside").mkdir()
    (project / "outside" / "kernels.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    if named == "outside/kernels.cu":
        res = spec_for_ptx(out.read_text(), "vec_add", ptx_path=str(out))
        assert res.reference_path == str((project / "outside" / "kernels.cu").resolve())


def test_a_provenance_header_may_step_up_inside_its_project(tmp_path):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "kernels").mkdir()
    (project / "kernels" / "vec_add.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    out = project / "build" / "sub" / "lowered.ptx"
    out.parent.mkdir(parents=True)
    out.write_text("// source: ../../kernels/vec_add.cu\n" + VEC_ADD_PTX)
    res = spec_for_ptx(out.read_text(), "vec_add", ptx_path=str(out))
    assert res.reference_path == str((project / "kernels" / "vec_add.cu").resolve())


def test_a_provenance_header_cannot_follow_a_symlink_out_of_its_folder(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "kernels.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "link").symlink_to(tmp_path / "outside")
    out = project / "lowered.ptx"
    out.write_text("// source: link/kernels.cu\n" + VEC_ADD_PTX)
    assert spec_for_ptx(out.read_text(), "vec_add", ptx_path=str(out)).reference_path is None


def test_a_cu_beside_that_lacks_the_kernel_is_not_its_pair(tmp_path):
    """NAME.cu beside NAME.ptx pairs them by name only: when it has no kernel of the entry's
    name, the PTX's own @gputest lines are its spec (and without them, the message says why)."""
    annotated = VEC_ADD_PTX.replace(
        ".visible .entry vec_add(",
        "// @gputest a: in f32[n]; b: in f32[n]; c: out f32[n]; n: size\n// @gputest ref: c = a + b\n.visible .entry vec_add(",
    )
    (tmp_path / "k.cu").write_text("__global__ void other(float* y) { y[0] = 1.0f; }\n")
    ptx = tmp_path / "k.ptx"
    ptx.write_text(annotated)
    res = spec_for_ptx(annotated, "vec_add", ptx_path=str(ptx))
    assert res.ok, res.problems
    assert res.reference_path is None and res.spec.numpy_ref == "c = a + b"
    bare = spec_for_ptx(VEC_ADD_PTX, "vec_add", ptx_path=str(ptx))
    assert not bare.ok
    assert "k.cu, its pair by name, has no __global__ 'vec_add'" in bare.problems[0].message
