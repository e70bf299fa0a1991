"""The Triton kernel as the reference of a GPU test, and the test spec a Triton signature gives.

Spec (any machine): the kernel's signature (``frontend/triton.py`` + the resolved types) gives the
parameters -- a pointer the kernel ``tl.store``s through is an output (``inout`` when it also
``tl.load``s it), other pointers inputs; an integer named like a size (``n``, ``n_elements``,
``numel`` ...) is the problem size and every pointer's length; a float scalar gets 1.25 -- and
the launch: one block of ``num_warps * 32`` threads per Triton program, ``cdiv(n, BLOCK)``
programs when the kernel has exactly one integer constexpr. ``# @gputest`` lines above the kernel
override any of it (gputest/README.md), e.g. for a 2-D grid.

Reference (the GPU worker only, where a GPU and triton exist): the kernel is built from its own
source as in ``toolchain/triton_compile.py`` (no code of the file runs) and launched by Triton
itself (``kernel[grid](...)``) on torch tensors holding the case's inputs; its outputs are the
expected values, compared element by element like any reference. It is timed with
``triton.testing.do_bench`` (median, L2 cleared between runs).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ptxls.frontend.triton import read_triton
from ptxls.toolchain.triton_compile import recipe_for

from .spec import BLOCK, LaunchSpec, ParamSpec, SpecProblem, SpecResolution, TestSpec

# Triton's type names -> the harness's
TRITON_TO_DTYPE = {
    "fp64": "f64", "fp32": "f32", "fp16": "f16", "bf16": "bf16",
    "i64": "i64", "u64": "u64", "i32": "i32", "u32": "u32",
    "i16": "i16", "u16": "u16", "i8": "i8", "u8": "u8",
}  # fmt: skip
DTYPE_TO_TRITON = {v: k for k, v in TRITON_TO_DTYPE.items()}
SIZE_NAMES = {
    "n", "N", "size", "count", "len", "length", "numel", "num_elements", "n_elements",
    "nelems", "num", "total", "num_items", "n_elem", "N_ELEMENTS",
}  # fmt: skip


def python_comment_lines(text: str, constexprs: dict | None = None) -> list[str]:
    """The file's lines with '#' comments spelled '//' so gputest.annotations reads them; in
    '@gputest' lines a constexpr's name is replaced by its value (``grid=cdiv(M, BLOCK_M)``)."""
    lines = []
    for line in text.splitlines():
        line = re.sub(r"^(\s*)#", r"\1//", line)
        if "@gputest" in line:
            for name, value in (constexprs or {}).items():
                if isinstance(value, int) and not isinstance(value, bool):
                    line = re.sub(rf"\b{re.escape(name)}\b", str(value), line)
        lines.append(line)
    return lines


def spec_types_from_annotations(text: str, kernel) -> dict[str, str]:
    """``# @gputest x: in f32[n]; n: size`` above ``kernel`` -> {"x": "*fp32", "n": "i32"}."""
    from .annotations import items_above

    types: dict[str, str] = {}
    for item, _, _ in items_above(python_comment_lines(text), kernel.start_line):
        name, _, rest = item.partition(":")
        words = rest.split()
        if not words or name.strip() in ("launch", "sizes", "ref", "tol", "seed", "runs"):
            continue
        if words[0] in ("in", "out", "inout", "scratch") and len(words) > 1:
            dtype = words[1].split("[")[0]
            if dtype in DTYPE_TO_TRITON:
                types[name.strip()] = "*" + DTYPE_TO_TRITON[dtype]
        elif words[0] == "size":
            types[name.strip()] = DTYPE_TO_TRITON.get(words[1] if len(words) > 1 else "i32", "i32")
        elif words[0] in DTYPE_TO_TRITON:
            types[name.strip()] = DTYPE_TO_TRITON[words[0]]
    return types


def gputest_types(text: str, kernel: str) -> dict[str, str]:
    """Triton types from the kernel's ``# @gputest`` lines, for parameters nothing else types."""
    found = read_triton(text).kernel(kernel)
    return spec_types_from_annotations(text, found) if found is not None else {}


def triton_spec(text: str, kernel: str, file_path: str | None):
    """(TestSpec | None, problems, TritonBuild | None): the GPU test of a lowering of ``kernel``
    (a @triton.jit function of ``text``), whose reference is the Triton kernel itself."""
    build, why = recipe_for(text, kernel, file_path, gputest_types(text, kernel))
    if build is None:
        return None, [SpecProblem(why)], None
    spec, problems = infer_spec(text, read_triton(text).kernel(kernel), build)
    return spec, problems, build


_HEADER_SOURCE = re.compile(r"^//\s*source:\s*(?P<path>\S.*?\.py)\s*$", re.MULTILINE)
_EXTERN_SHARED = re.compile(r"^\s*\.extern\s+\.shared\b", re.MULTILINE)


def paired_triton_source(ptx_text: str, ptx_path: str | None) -> Path | None:
    """The .py a PTX file was lowered from, as its provenance header names it
    (``// source: kernels/add.py``), relative to the .ptx's folder or any folder above it."""
    m = _HEADER_SOURCE.search(ptx_text.split(".version", 1)[0])
    if not m or not ptx_path:
        return None
    named = Path(m.group("path"))
    if named.is_absolute():
        return named if named.is_file() else None
    for folder in Path(ptx_path).resolve().parents:
        if (folder / named).is_file():
            return folder / named
    return None


def paired_triton_resolution(
    ptx_text: str, kernel: str, ptx_path: str | None
) -> SpecResolution | None:
    """The spec of a .ptx lowered from a Triton kernel, from the .py its header names, with
    that kernel's build (its reference) when the spec is usable; None when it names none
    (``spec_source.resolve_spec`` for ``ptxls test``). Reads files: off the event loop."""
    source = paired_triton_source(ptx_text, ptx_path)
    if source is None:
        return None
    text = source.read_text(encoding="utf-8", errors="replace")
    if read_triton(text).kernel(kernel) is None:
        return None
    spec, problems, build = triton_spec(text, kernel, str(source))
    if build is None or spec is None or problems:
        return SpecResolution(spec, problems)
    spec.origin.append(f"paired with {source.name} (the PTX's provenance header)")
    return SpecResolution(spec, [], build=build)


async def with_triton_shared(ptx_text: str, resolution: SpecResolution) -> None:
    """A PTX that declares dynamic shared memory (Triton's own PTX: ``.extern .shared``) gets
    the size Triton's compile of the kernel reports (a separate process, as for the lowering)."""
    spec, build = resolution.spec, resolution.build
    if spec is None or build is None:
        return
    if _EXTERN_SHARED.search(ptx_text) and spec.launch.shared in ("", "0"):
        from ptxls.toolchain.triton_compile import triton_to_ptx

        compiled = await triton_to_ptx(build.to_json(), arch=_ptx_target(ptx_text))
        if compiled.ok and compiled.metadata:
            spec.launch.shared = str(compiled.metadata.get("shared", 0))


async def paired_triton(ptx_text: str, kernel: str, ptx_path: str | None):
    """For ``ptxls test`` of a .ptx lowered from a Triton kernel: (spec, problems, build JSON)
    from the .py its header names (``paired_triton_resolution``, its shared memory from
    ``with_triton_shared``), or None when it names none."""
    import asyncio

    res = await asyncio.to_thread(paired_triton_resolution, ptx_text, kernel, ptx_path)
    if res is None:
        return None
    if res.build is None:
        return res.spec, res.problems, None
    await with_triton_shared(ptx_text, res)
    return res.spec, [], res.build.to_json()


def _ptx_target(ptx: str) -> str:
    m = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.MULTILINE)
    return m.group(1) if m else "sm_90"


def infer_spec(text: str, kernel, build) -> tuple[TestSpec | None, list[SpecProblem]]:
    """The test spec of a Triton kernel from its signature, then its ``# @gputest`` lines."""
    from .annotations import apply

    params, problems = _params(kernel, build)
    warps = build.options.get("num_warps", 4)
    inferred = TestSpec(kernel=kernel.name, params=params, launch=_launch(build, warps))
    inferred.origin.append(f"inferred from the Triton signature of {kernel.name}")
    lines = python_comment_lines(text, build.constexprs)
    spec, more = apply(inferred, lines, kernel.start_line, kernel.name)
    problems += more
    if spec is not None and not problems:
        from .spec import validate

        problems += validate(spec)
    return spec, problems


def _params(kernel, build) -> tuple[list[ParamSpec], list[SpecProblem]]:
    params, problems = [], []
    size_seen = False
    for p in kernel.params:
        ty = build.signature.get(p.name, "constexpr")
        if ty == "constexpr":
            continue
        base = ty.lstrip("*")
        dtype = TRITON_TO_DTYPE.get(base)
        if dtype is None:
            problems.append(SpecProblem(f"'{p.name}': no GPU test for Triton type {ty}"))
            continue
        if ty.startswith("*"):
            role = "in"
            if p.name in kernel.stored:
                role = "inout" if p.name in kernel.loaded else "out"
            params.append(ParamSpec(p.name, role, dtype))
        elif not dtype.startswith("f") and p.name in SIZE_NAMES and not size_seen:
            params.append(ParamSpec(p.name, "size", dtype))
            size_seen = True
        elif dtype.startswith("f"):
            params.append(ParamSpec(p.name, "scalar", dtype, value="1.25"))
        else:
            params.append(ParamSpec(p.name, "scalar", dtype))  # validate() asks for its value
    return params, problems


def _launch(build, warps: int) -> LaunchSpec:
    ints = [v for v in build.constexprs.values() if isinstance(v, int) and not isinstance(v, bool)]
    grid = f"cdiv(n, {ints[0]})" if len(ints) == 1 else f"ceil(n/{BLOCK})"
    return LaunchSpec(grid=grid, block=str(warps * 32), shared="0")


# --- the worker side: only where a GPU and triton exist ---

_TORCH_DTYPES = {
    "f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16",
    "i64": "int64", "u64": "uint64", "i32": "int32", "u32": "uint32",
    "i16": "int16", "u16": "uint16", "i8": "int8", "u8": "uint8",
}  # fmt: skip


class TritonReference:
    """The Triton kernel of a build, launched by Triton on torch tensors."""

    def __init__(self, ref: dict):
        from ptxls.toolchain.triton_compile import build_functions

        self.build = ref["build"]
        self.fn = build_functions(self.build)[self.build["kernel"]]
        self.constexprs = dict(self.build.get("constexprs", {}))
        self.options = dict(self.build.get("options", {}))

    def _tensors(self, spec, host_inputs, lengths) -> dict:
        import torch

        from .dtypes import DTYPES, poison

        out = {}
        for p in spec.params:
            if not p.is_pointer:
                continue
            dt = DTYPES[p.dtype]
            data = host_inputs.get(p.name)
            if data is None:
                data = np.zeros(lengths[p.name], dt.storage)
                if p.role != "scratch":
                    data = poison(dt, lengths[p.name])
            # at least one element: an empty tensor's data_ptr() is 0, which Triton's launcher
            # refuses; the kernel is masked by n and reads or writes none of it
            host = np.ascontiguousarray(data if len(data) else np.zeros(1, dt.storage))
            if p.dtype == "bf16":
                t = torch.from_numpy(host.view(np.int16)).cuda().view(torch.bfloat16)
            else:
                t = torch.from_numpy(host).cuda()
            out[p.name] = t
        return out

    def _args(self, spec, tensors, env) -> list:
        return [tensors[p.name] if p.is_pointer else env[p.name] for p in spec.params]

    def _launch(self, spec, tensors, env, grid) -> None:
        self.fn[tuple(grid)](*self._args(spec, tensors, env), **self.constexprs, **self.options)

    def expected(self, spec, host_inputs, lengths, env, grid) -> dict[str, np.ndarray]:
        import torch

        tensors = self._tensors(spec, host_inputs, lengths)
        self._launch(spec, tensors, env, grid)
        torch.cuda.synchronize()
        result = {}
        for p in spec.params:
            if p.role not in ("out", "inout"):
                continue
            t = tensors[p.name][: lengths[p.name]]
            if p.dtype == "bf16":
                result[p.name] = t.view(torch.int16).cpu().numpy().view(np.uint16)
            else:
                result[p.name] = t.cpu().numpy()
        return result

    def time_ms(self, spec, host_inputs, lengths, env, grid) -> float:
        from triton.testing import do_bench

        tensors = self._tensors(spec, host_inputs, lengths)
        return float(do_bench(lambda: self._launch(spec, tensors, env, grid), return_mode="median"))

    def describe(self) -> str:
        import triton

        return f"the Triton kernel {self.build['kernel']} (Triton {triton.__version__})"
