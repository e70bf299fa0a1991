"""gputest/spec_source.py: the one resolver of a kernel's test spec from the person's source,
and the one wording of why a spec cannot be tested."""

from pathlib import Path

from ptxls.gputest.spec_source import SpecSource, resolve_spec, unusable

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_cuda_gives_the_spec_and_is_its_own_reference():
    path = EXAMPLES / "vec_add.cu"
    res = resolve_spec(SpecSource("cuda", path.read_text(), "vec_add", str(path)))
    assert res.ok and unusable(res) == ""
    assert [p.name for p in res.spec.params] == ["a", "b", "c", "n"]
    assert res.reference_source == path.read_text() and res.reference_path == str(path)


def test_ptx_pairs_with_its_cuda_and_a_missing_kernel_is_said_once():
    path = EXAMPLES / "vec_add.ptx"
    res = resolve_spec(SpecSource("ptx", path.read_text(), "vec_add", str(path)))
    assert res.ok
    missing = resolve_spec(SpecSource("ptx", path.read_text(), "nope", str(path)))
    assert not missing.ok
    assert unusable(missing).startswith("no usable test spec from the source (no .entry 'nope'")


def test_a_source_kind_it_does_not_read_resolves_to_nothing_and_says_so():
    res = resolve_spec(SpecSource("fortran", "subroutine k\nend", "k"))
    assert res.spec is None and unusable(res) == "no runnable Fortran reference"


def test_triton_gives_the_spec_and_the_build_its_test_launches():
    path = EXAMPLES / "vec_add_triton.py"
    res = resolve_spec(SpecSource("triton", path.read_text(), "add_kernel", str(path)))
    assert res.ok and unusable(res) == ""
    assert [p.name for p in res.spec.params] == ["x_ptr", "y_ptr", "out_ptr", "n_elements"]
    assert res.build is not None and res.build.kernel == "add_kernel"
    missing = resolve_spec(SpecSource("triton", "def k(): pass", "k"))
    assert missing.build is None and unusable(missing).startswith(
        "no usable test spec from the source ("
    )


REQUEST = (
    "// @ptx: relu(float* x, int n): x[i] = max(x[i], 0) for i < n\n"
    "// @gputest x: inout f32[n]; n: size\n"
    "{ref}"
)


def test_a_request_is_testable_with_its_gputest_lines_and_a_ref():
    text = REQUEST.format(ref="// @gputest ref: x = np.maximum(x, 0)\n")
    res = resolve_spec(SpecSource("request", text, "relu", line=3))
    assert res.ok and [p.name for p in res.spec.params] == ["x", "n"]
    no_ref = resolve_spec(SpecSource("request", REQUEST.format(ref=""), "relu", line=2))
    assert unusable(no_ref) == "the request's @gputest lines give no 'ref:' to compare with"
    unnamed = resolve_spec(SpecSource("request", text, "", line=3))
    assert unusable(unnamed).startswith("no reference to test against for a plain-language")
