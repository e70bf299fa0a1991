"""The one resolver of a kernel's test spec from what a person wrote: ``SpecSource`` →
``SpecResolution``.

The GPU test (``api.run_gpu_test*``: ``ptxls test``, the editor's test), the lowering loop
(``lowering/source_spec.py``, the verifier in ``lowering/verify.py``), the debugger, the
sanitizer, ``ptxls bench``, ``ptxls eval`` and the emulator's coverage bench all need
"the test spec of kernel K, from the source the person gave" — never from a candidate's PTX,
whose ``@gputest`` lines could loosen its own test. Every kind of source the product handles is
read here:

- CUDA: the signature, then its annotation or sidecar (``pairing.infer_spec_from_cuda``); the
  source is also the reference it runs against;
- PTX: a ``spec.json`` named (``--spec``), the Triton ``.py`` its provenance header names, a
  ``spec.json`` beside it that names the kernel (the library's layout), else its annotation and
  paired ``.cu`` (``pairing.spec_for_ptx``); the file lookups are the test's, asked for by flags;
- Triton ``.py``: the ``@triton.jit`` signature and ``# @gputest`` lines (``triton_ref``), with
  the kernel's build, the reference its test launches;
- a plain-language request: its comment block's ``@gputest`` lines, which must give a ``ref:``.

Either way one ``SpecResolution``: the spec, or why it cannot be tested (``.unusable``, the one
wording of it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .pairing import infer_spec_from_cuda, spec_for_ptx
from .spec import SpecResolution

KINDS = ("cuda", "ptx", "triton", "request")


@dataclass(frozen=True)
class SpecSource:
    kind: str  # one of KINDS
    text: str
    kernel: str  # for a request: its name ("" when it has none: nothing to test against)
    path: str = ""  # the file, for pairing (a .cu beside a .ptx, a sidecar) and messages
    # PTX only: the CUDA named as its reference (``--ref``), which also pairs its spec
    reference_cuda: str | None = None
    reference_path: str | None = None
    spec_file: str = ""  # PTX: a spec.json named (``--spec FILE``), which wins
    spec_json_beside: bool = False  # PTX: a spec.json beside ``path`` naming the kernel counts
    triton_header: bool = False  # PTX: the Triton .py its provenance header names is its source
    line: int = 0  # a request: the first line after its comment block (where its lines end)


def resolve_spec(source: SpecSource) -> SpecResolution:
    """The spec of ``source.kernel``, or why it cannot be tested in ``reason`` (set whenever
    the resolution is not ``ok``). Reads files beside ``source.path`` (pairing): call it off
    the event loop."""
    res = _read(source)
    if not res.ok and not res.reason:
        res.reason = res.unusable
    return res


def _read(source: SpecSource) -> SpecResolution:
    if source.kind == "cuda":
        return _cuda(source)
    if source.kind == "ptx":
        return _ptx(source)
    if source.kind == "triton":
        return _triton(source)
    if source.kind == "request":
        return _request(source)
    return SpecResolution(None, reason=f"no runnable {source.kind.capitalize()} reference")


def unusable(resolution: SpecResolution) -> str:
    """Why a resolution cannot be tested, in one line ("" when it can)."""
    return resolution.unusable


def _cuda(source: SpecSource) -> SpecResolution:
    spec, problems = infer_spec_from_cuda(source.text, source.kernel, path=source.path)
    return SpecResolution(spec, problems, source.text, source.path or None)


def _ptx(source: SpecSource) -> SpecResolution:
    from .library_spec import library_resolution, spec_json_beside

    path = source.path or None
    if source.spec_file:
        res = library_resolution(source.text, source.kernel, Path(source.spec_file), explicit=True)
        return _with_reference(res, source)
    if source.triton_header and source.reference_cuda is None:
        from .triton_ref import paired_triton_resolution

        paired = paired_triton_resolution(source.text, source.kernel, path)
        if paired is not None:
            return paired
    beside = spec_json_beside(path) if source.spec_json_beside else None
    if beside is not None:
        found = library_resolution(source.text, source.kernel, beside, explicit=False)
        if found is not None:
            return _with_reference(found, source)
    return spec_for_ptx(source.text, source.kernel, ptx_path=path,
                        reference_cuda=source.reference_cuda,
                        reference_path=source.reference_path)  # fmt: skip


def _with_reference(res: SpecResolution, source: SpecSource) -> SpecResolution:
    """A library spec tested against the CUDA named with ``--ref`` instead of its own."""
    if source.reference_cuda is None:
        return res
    return replace(res, reference_source=source.reference_cuda,
                   reference_path=source.reference_path)  # fmt: skip


def _triton(source: SpecSource) -> SpecResolution:
    from .triton_ref import triton_spec  # numpy: only for a Triton source

    spec, problems, build = triton_spec(source.text, source.kernel, source.path or None)
    return SpecResolution(spec, list(problems), build=build)


NO_REQUEST_REF = (
    "no reference to test against for a plain-language request (add @gputest lines with a ref:)"
)


def _request(source: SpecSource) -> SpecResolution:
    """A plain-language request is GPU-testable when its comment block carries ``@gputest``
    lines: the parameters in order and a numpy ``ref:`` (gputest/README.md), e.g.

        // @ptx: relu(float* x, int n): x[i] = max(x[i], 0) for i < n
        // @gputest x: inout f32[n]; n: size
        // @gputest ref: x = np.maximum(x, 0)
    """
    if not source.kernel:
        return SpecResolution(None, reason=NO_REQUEST_REF)
    from . import annotations

    lines = source.text.splitlines()
    spec, problems = annotations.apply(None, lines, source.line, source.kernel, where="request")
    if problems:
        why = "; ".join(p.message for p in problems)
        return SpecResolution(None, problems, reason=f"the request's @gputest lines have problems: {why}")  # fmt: skip
    if spec is None:
        return SpecResolution(None, reason=NO_REQUEST_REF)
    if not spec.numpy_ref:
        return SpecResolution(None, reason="the request's @gputest lines give no 'ref:' to compare with")  # fmt: skip
    return SpecResolution(spec)
