"""The test case a debugging run launches: the kernel's spec (the same resolution as
``ptxls test``), its scalars and launch for the size ``n``, and the inputs the GPU test harness
makes for that seed — so the element a failed test named is the element the debugger shows.

The harness's steps are reused, not copied: ``scalar_env``/``launch_dims`` for the size,
``_inputs`` for each input (the same generator, seeded with the case's seed, in the spec's
parameter order), ``poison`` for outputs, ``starts_unwritten`` for the outputs whose bytes the
emulator holds as unwritten (a read before a write is its ``uninitialized-global`` warning, as in
``ptxls test --device cpu``), ``scalar_arg`` for scalar parameters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ptxls import emulator
from ptxls.frontend.languages import CUDA, PYTHON, language_of
from ptxls.gputest import exprs
from ptxls.gputest.dtypes import DTYPES, poison
from ptxls.gputest.harness import _inputs, scalar_arg
from ptxls.gputest.harness_inputs import starts_unwritten
from ptxls.gputest.launch import launch_dims, scalar_env
from ptxls.gputest.spec import SpecResolution, TestSpec
from ptxls.gputest.spec_source import SpecSource, resolve_spec, unusable

# Without an `n` in the launch configuration: the largest of the spec's sizes up to this
# (the sizes end with a 2^24 timing size, slow to step through on a CPU).
DEFAULT_MAX_N = 1 << 16


class CaseError(Exception):
    """Why the launch configuration cannot be debugged, in one sentence for the user."""


@dataclass
class BufferInfo:
    name: str  # the spec's parameter name ("c")
    role: str  # in | out | inout | scratch
    dtype: str  # the spec's element type ("f32")
    storage: np.dtype
    length: int
    address: int  # in the emulator's global memory


@dataclass
class Case:
    program: str
    ptx: str
    kernel: str
    n: int
    seed: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    env: dict
    params: list[bytes]
    buffers: list[BufferInfo]
    memory: emulator.Memory
    module: emulator.EmuModule
    spec_note: str = ""
    scalars: dict = field(default_factory=dict)
    # a CUDA program: each line of the PTX nvcc made (``ptx``) → the CUDA line it comes from
    source_map: dict[int, int] = field(default_factory=dict)
    spec: TestSpec | None = None
    resolution: SpecResolution | None = None  # its reference source, for first_wrong.py
    host_inputs: dict = field(default_factory=dict)  # the inputs as the harness made them
    lengths: dict = field(default_factory=dict)

    def buffer(self, name: str) -> BufferInfo | None:
        return next((b for b in self.buffers if b.name == name), None)


def read_program(path: str) -> str:
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise CaseError(f"cannot read {path}: {e.strerror or e}") from None


def build_case(program: str, kernel: str | None = None, n: int | None = None,
               seed: int | None = None, spec_path: str | None = None) -> Case:  # fmt: skip
    """Load ``program`` in the emulator and lay out the test case of ``kernel`` at size ``n``
    with the inputs of ``seed``. Raises CaseError with a sentence for the user."""
    text = read_program(program)
    source_map: dict[int, int] = {}
    cuda_text = triton = None
    if language_of(program) == CUDA:
        cuda_text = text
        kernel = kernel or _first_cuda_kernel(text, program)
        text, entry, source_map = lower_cuda(text, kernel, program)
    elif language_of(program) == PYTHON:
        triton = lower_triton(text, kernel, program)
        text, entry, source_map = triton.ptx, triton.entry, triton.source_map
    try:
        module = emulator.load(text)
    except emulator.Refused as e:
        at = f" at line {e.line}" if getattr(e, "line", None) else ""
        raise CaseError(f"the emulator cannot run this PTX{at}: {e}") from None
    kernels = module.kernels
    if not kernels:
        raise CaseError(f"{program} has no .entry kernel")
    if cuda_text is not None:
        assert kernel is not None  # named above (the first __global__ one by default)
        res = resolve_spec(SpecSource("cuda", cuda_text, kernel, str(program)))
        kernel = entry
    elif triton is not None:
        res = triton.resolution
        kernel = entry
    else:
        kernel = kernel or kernels[0]
        if kernel not in kernels:
            raise CaseError(f"no kernel named {kernel!r} (kernels: {', '.join(kernels)})")
        # the spec as ``ptxls test`` finds it: a ``--spec`` file, a spec.json beside the PTX
        # (the library's layout), else the PTX's annotation or paired CUDA source
        res = resolve_spec(SpecSource("ptx", text, kernel, str(program),
                                      spec_file=spec_path or "", spec_json_beside=True))  # fmt: skip
    if not res.ok:
        raise CaseError(f"{kernel}: {unusable(res)}")
    spec = res.spec
    assert spec is not None  # res.ok
    if n is None:
        small = [s for s in spec.sizes if 0 < s <= DEFAULT_MAX_N]
        n = max(small) if small else 256
    n = int(n)
    seed = int(seed if seed is not None else (spec.seed if spec.seed is not None else 0))
    env = scalar_env(spec, n)
    grid, block, shared = launch_dims(spec, env)
    rng = np.random.default_rng(seed)
    memory = emulator.Memory()
    buffers: list[BufferInfo] = []
    params: list[bytes] = []
    host_inputs: dict = {}
    lengths: dict = {}
    for p in spec.params:
        if not p.is_pointer:
            params.append(scalar_arg(p, env[p.name]).tobytes())
            continue
        dt = DTYPES[p.dtype]
        length = max(0, exprs.evaluate_int(p.length, env))
        lengths[p.name] = length
        if p.role in ("in", "inout"):
            data = host_inputs[p.name] = _inputs(p, length, rng)
        elif p.role == "scratch":
            data = np.zeros(length, dt.storage)
        else:
            data = poison(dt, length)
        addr = memory.alloc(max(1, data.nbytes), p.name)
        memory.write(addr, data.view(np.uint8).tobytes())
        if starts_unwritten(p) and data.nbytes:
            memory.mark_unwritten(addr, data.nbytes)
        buffers.append(BufferInfo(p.name, p.role, p.dtype, np.dtype(dt.storage), length, addr))
        params.append(int(addr).to_bytes(8, "little"))
    func = module.kernel(kernel)
    if triton is not None and len(params) < len(func.params):
        # Triton's trailing scratch pointers (global, profile): null, as Triton passes them
        # when the kernel needs no scratch (lower_triton refuses one that does)
        params += [bytes(8)] * (len(func.params) - len(params))
    if len(params) != len(func.params):
        raise CaseError(
            f"the spec of {kernel} has {len(params)} parameters, the PTX {len(func.params)}"
        )
    return Case(program, text, kernel, n, seed, grid, block, shared, env, params, buffers,
                memory, module, "; ".join(spec.origin), source_map=source_map, spec=spec,
                resolution=res, host_inputs=host_inputs, lengths=lengths)  # fmt: skip


def _first_cuda_kernel(text: str, program: str) -> str:
    m = re.search(r"__global__\s+(?:__\w+__(?:\([^)]*\))?\s+)*void\s+(\w+)", text)
    if m is None:
        raise CaseError(f"{program}: no __global__ kernel found; name one with 'kernel'")
    return m.group(1)


def lower_cuda(text: str, kernel: str, program: str) -> tuple[str, str, dict[int, int]]:
    """nvcc's PTX of ``kernel`` the way Show PTX makes it (-O3 -lineinfo, the CUDA lines
    interleaved as comments), its entry name, and each PTX line's CUDA line."""
    import asyncio

    from ptxls.lowering.show_ptx import show_ptx

    shown = asyncio.run(show_ptx(text, kernel=kernel, file_path=program))
    if not shown.ok:
        raise CaseError(f"{Path(program).name}: no PTX for {kernel}: {shown.message}")
    marker = re.compile(r"^\s*//\s*" + re.escape(Path(program).name) + r":(\d+):")
    source_map, current = {}, None
    for number, line in enumerate(shown.ptx.splitlines(), 1):
        m = marker.match(line)
        if m:
            current = int(m.group(1))
        elif current is not None and line.strip():
            source_map[number] = current
    return shown.ptx, shown.entry, source_map


@dataclass
class TritonLowered:
    ptx: str
    entry: str
    source_map: dict[int, int]
    resolution: SpecResolution


def lower_triton(text: str, kernel: str | None, program: str) -> TritonLowered:
    """Triton's PTX of ``kernel`` as Show PTX makes it (lowering/triton_reference.py: built from
    the kernel's own source in a separate process, no code of the file runs; Triton compiles
    for a target without a GPU), the Python lines interleaved, each PTX line's Python line (from
    ``.loc``), and the test spec the Triton signature gives (gputest/triton_ref.py)."""
    import asyncio

    from ptxls.frontend.triton import read_triton
    from ptxls.lowering.show_ptx import interleave_source
    from ptxls.lowering.triton_reference import compile_kernel, drop_debug_sections
    from ptxls.toolchain.triton_compile import source_name

    found = read_triton(text)
    if kernel is None:
        tops = [k.name for k in found.kernels if not k.nested]
        if not tops:
            raise CaseError(f"{Path(program).name}: no @triton.jit kernel found")
        kernel = tops[0]
    if found.kernel(kernel) is None:
        names = ", ".join(k.name for k in found.kernels) or "none"
        raise CaseError(f"no Triton kernel named {kernel!r} (kernels: {names})")
    res = resolve_spec(SpecSource("triton", text, kernel, program))
    spec = res.spec
    build, result = asyncio.run(compile_kernel(text, kernel, program, "sm_90", 180.0))
    if not result.ok:
        raise CaseError(f"{Path(program).name}: no PTX for {kernel}: {result.message}")
    meta = result.metadata or {}
    if meta.get("global_scratch_size") or meta.get("profile_scratch_size"):
        raise CaseError(f"{kernel}: Triton's PTX needs a scratch buffer; not supported yet")
    name = source_name(program)
    ptx, _ = interleave_source(drop_debug_sections(result.ptx), text, name)
    entry = meta.get("name") or kernel
    if spec is not None and meta.get("shared") and spec.launch.shared in ("", "0"):
        spec.launch.shared = str(int(meta["shared"]))  # .extern .shared: Triton's size
    marker = re.compile(r"^\s*//\s*" + re.escape(name) + r":(\d+):")
    source_map, current = {}, None
    for number, line in enumerate(ptx.splitlines(), 1):
        m = marker.match(line)
        if m:
            current = int(m.group(1))
        elif current is not None and line.strip():
            source_map[number] = current
    return TritonLowered(ptx, entry, source_map, res)
