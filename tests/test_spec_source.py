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


def test_a_source_kind_it_does_not_read_resolves_to_nothing():
    res = resolve_spec(SpecSource("triton", "def k(): pass", "k"))
    assert (
        res.spec is None and unusable(res) == "no usable test spec from the source (none inferred)"
    )
