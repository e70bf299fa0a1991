"""The one resolver of a kernel's test spec from what a person wrote: ``SpecSource`` →
``SpecResolution``.

The GPU test, the lowering loop's verifier and the editor's lowering all need "the test spec of
kernel K, from the source the person gave" — never from a candidate's PTX, whose ``@gputest``
lines could loosen its own test. A source is CUDA (the signature, then its annotation or
sidecar: ``pairing.infer_spec_from_cuda``) or PTX (its annotation, a paired ``.cu``, a
``spec.json``: ``pairing.spec_for_ptx``). ``unusable`` is the one wording of why a resolution
cannot be tested. Triton sources and plain-language requests are read in ``lowering/`` (they
need its readers) and end in the same ``SpecResolution``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .pairing import SpecResolution, infer_spec_from_cuda, spec_for_ptx


@dataclass(frozen=True)
class SpecSource:
    kind: str  # "cuda" or "ptx"
    text: str
    kernel: str
    path: str = ""  # the file, for pairing (a .cu beside a .ptx, a sidecar) and messages


def resolve_spec(source: SpecSource) -> SpecResolution:
    """The spec of ``source.kernel``; for CUDA the source is also the reference it runs
    against. Reads files beside ``source.path`` (pairing): call it off the event loop."""
    if source.kind == "cuda":
        spec, problems = infer_spec_from_cuda(source.text, source.kernel, path=source.path)
        return SpecResolution(spec, problems, source.text, source.path or None)
    if source.kind == "ptx":
        return spec_for_ptx(source.text, source.kernel, ptx_path=source.path or None)
    return SpecResolution(None, [], None, None)


def unusable(resolution: SpecResolution) -> str:
    """Why a resolution cannot be tested, in one line ("" when it can)."""
    if resolution.ok:
        return ""
    detail = "; ".join(str(getattr(p, "message", p)) for p in resolution.problems[:3])
    return f"no usable test spec from the source ({detail or 'none inferred'})"
