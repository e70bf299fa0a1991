"""A test spec inferred from a CUDA kernel's signature (read by ``ptxls.frontend.cuda``).

Inference follows what the signature says and what kernel code conventionally means:
``const T*`` is an input, ``T*`` an output, an integer named n/N/size/count/len/... is the problem
size, other scalars need a value (floats get 1.25 and say so). The launch is the elementwise
default, 256 threads and ceil(n/256) blocks. Annotations override any of it.
"""

from __future__ import annotations

from ptxls.frontend.cuda import CudaKernel

from . import dtypes
from .spec import LaunchSpec, ParamSpec, SpecProblem, TestSpec

SIZE_NAMES = {
    "n", "N", "size", "count", "len", "length", "numel", "num_elements", "n_elements",
    "nelems", "num", "total", "num_items",
}  # fmt: skip


def infer_spec(kernel: CudaKernel) -> tuple[TestSpec, list[SpecProblem]]:
    """A spec from the signature alone; problems say what could not be inferred."""
    params: list[ParamSpec] = []
    problems: list[SpecProblem] = []
    origin = [f"roles and types from the CUDA signature of {kernel.name}"]
    size_seen = False
    for p in kernel.params:
        dt = dtypes.from_cuda(p.base_type)
        if dt is None:
            problems.append(
                SpecProblem(
                    f"parameter '{p.name}': cannot test type '{p.base_type}' "
                    f"(known: {', '.join(dtypes.DTYPES)}); annotate it",
                    kernel.line,
                )
            )
            params.append(ParamSpec(p.name, "in" if p.is_pointer else "scalar", "?"))
            continue
        if p.is_pointer:
            params.append(ParamSpec(p.name, "in" if p.is_const else "out", dt.name, "n"))
        elif not dt.is_float and p.name in SIZE_NAMES and not size_seen:
            size_seen = True
            params.append(ParamSpec(p.name, "size", dt.name))
        elif dt.is_float:
            params.append(ParamSpec(p.name, "scalar", dt.name, value="1.25"))
            origin.append(f"{p.name} = 1.25 (default for a float scalar)")
        else:
            params.append(ParamSpec(p.name, "scalar", dt.name, value=None))
    if not size_seen and any(p.is_pointer for p in params):
        origin.append("no size parameter: pointer lengths default to n, the case size")
    spec = TestSpec(kernel=kernel.name, params=params, launch=LaunchSpec(), origin=origin)
    return spec, problems
