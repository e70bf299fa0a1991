"""The emulator as a device: the functions of gputest/cuda_driver.py (alloc, free, upload,
download, copy_d2d, memset8, launch, synchronize, Events, call) on top of the emulator's engine,
so the GPU test harness (gputest/harness.py) runs unchanged on the CPU — the same specs, sizes,
poisoned outputs, guard bands, inputs-unchanged check and comparison.

What differs from a GPU, and why:

- modules are loaded from PTX text (``load_ptx``), never a cubin: the emulator runs PTX;
- there is no clock (``HAS_CLOCK = False``): the harness times nothing, so an emulated result
  never carries a time, a bandwidth or a speed ratio; ``Events`` refuse to measure;
- every launch is checked as it runs; what the engine saw (an out-of-bounds access, a read of
  memory never written, a race on shared memory, a divergent barrier, a bad ``shfl.sync`` mask,
  a misaligned access) is kept for ``take_findings()``, which the harness reads after each launch
  (an error fails its case; a warning — a read of a poisoned output before the kernel wrote it,
  a register never written — is reported and changes no verdict, see emulator/errors.py);
- a launch that does not finish within its budget of thread-instructions raises ``Hang`` (the
  GPU harness reports a timeout there); an instruction the emulator does not implement raises
  ``Refused`` at load, before any launch.

One process holds one emulated device (module-level state, like the driver's context); the worker
process runs it, so a runaway emulation is killed with its process.
"""

from __future__ import annotations

import numpy as np

import ptxls.emulator as emu

HAS_CLOCK = False  # the harness skips every timing step on this device
KIND = "emulator"
NAME = "ptxls PTX emulator (CPU)"
ARCH = "sm_90"  # the ISA the emulator follows; the kernel's own .target is checked by ptxas
MAX_PTX_ISA = (9, 9)
# Thread-instructions one launch may run before it counts as hung (a spin on a flag nobody
# sets). The worker sets it per request (``set_budget``).
DEFAULT_BUDGET = 2_000_000_000
DEFAULT_HANG_SECONDS = 60.0  # a spin of a few threads runs few thread-instructions per second

STICKY: set[str] = set()  # no emulated error leaves the device unusable


class CudaError(Exception):
    """The driver's error type, for the harness's ``except cd.CudaError``: ``name``, ``text``,
    ``sticky`` as cuda_driver.CudaError has them."""

    def __init__(self, call: str, name: str, text: str):
        self.call, self.name, self.text = call, name, text
        self.sticky = False
        super().__init__(f"{name} ({text}) from {call}")


class Hang(CudaError):
    """The launch ran out of its thread-instruction budget: the emulator's timeout."""

    def __init__(self, budget: int, ran: int, where: str = ""):
        self.budget, self.ran = budget, ran
        super().__init__(
            "launch",
            "EMULATOR_HANG",
            f"the kernel did not finish within the emulator's budget of {budget:,} "
            f"thread-instructions{where} — hung (a spin on a flag nobody sets, an endless loop?)",
        )


class Refused(CudaError):
    """The PTX uses an instruction the emulator does not implement (named, with its line)."""

    def __init__(self, refused):
        self.refused = refused
        instruction = getattr(refused, "instruction", "") or ""
        line = getattr(refused, "line", None)
        why = getattr(refused, "why", "") or str(refused)
        at = f" at line {line}" if line else ""
        self.summary = f"the emulator does not implement {instruction}{at}: {why}".replace(
            "implement  ", "implement "
        )
        super().__init__("load", "EMULATOR_REFUSED", self.summary)


# The device's global memory is reserved at this size up front (numpy's zeros: calloc, so only
# the pages a test touches are ever mapped) instead of growing by copies: a 2^24-element test
# moves ~0.5 GB through it, and every growth copied and re-faulted all of it. Past this it
# still grows as before.
MEMORY_RESERVE = 1 << 32


class _Device:
    def __init__(self):
        _tune_process()
        self.memory = emu.Memory(capacity=_reserve())
        self.findings: list[dict] = []
        self.budget = DEFAULT_BUDGET
        self.budget_seconds = DEFAULT_HANG_SECONDS
        self.thread_instructions = 0  # over this process's life (coverage/benchmarks read it)
        self.steps = 0  # scheduler steps (one instruction for one group of threads), likewise
        self.thread_work = 0  # the engine's work per thread, by instruction class (simt.cost_of)
        self.launches = 0
        self.opcodes: set[str] = set()  # opcode families run, where the engine reports them
        self.moved: dict[int, int] = {}  # an allocation's base -> its data's (name_buffer)
        self.outputs: dict[int, int] = {}  # pure outputs' data -> bytes, unwritten at each launch


_dev: _Device | None = None
_tuned = False


def _tune_process() -> None:
    """Allocator settings for the worker process that runs the emulated device (nothing else
    runs there). Every instruction of a wave (up to 270,336 threads) makes arrays of megabytes; by default
    glibc gives such blocks back to the kernel when freed and numpy asks for transparent huge
    pages, so each new array was page-faulted in again (with compaction stalls): on the 2-core
    machine a 2^24-element vec_add spent more system than user time. Keeping freed blocks in the
    heap (mmap threshold and trim threshold raised) and plain pages makes them reusable."""
    global _tuned
    if _tuned:
        return
    _tuned = True
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's mallopt parameters
        libc.mallopt(m_mmap_threshold, 1 << 30)
        libc.mallopt(m_trim_threshold, 1 << 30)  # a C int
    except (OSError, AttributeError):  # not glibc: the defaults stay
        pass
    try:
        import importlib

        importlib.import_module("numpy._core.multiarray")._set_madvise_hugepage(False)
    except (ImportError, AttributeError):  # another numpy layout: its default stays
        pass


def _reserve() -> int:
    """MEMORY_RESERVE, or less where the machine has less memory (calloc of more than it has
    would be refused under the kernel's overcommit heuristics)."""
    try:
        import os

        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 20
    return max(1 << 20, min(MEMORY_RESERVE, total // 4))


def _device() -> _Device:
    global _dev
    if _dev is None:
        _dev = _Device()
    return _dev


def device_info() -> dict:
    """The device as the worker reports it (hello and every result): ``kind`` says emulator."""
    return {
        "name": NAME,
        "kind": KIND,
        "arch": ARCH,
        "cc": [9, 0],
        "driver_version": 0,
        "driver_cuda": "none (emulated on the CPU)",
        "max_ptx_isa": list(MAX_PTX_ISA),
    }


class Context:
    """cuda_driver.Context's face: ``info()``, ``name``, ``cc``."""

    def __init__(self, ordinal: int = 0):
        _device()
        self.name, self.cc, self.driver = NAME, (9, 0), 0
        self.device_info = None

    def info(self) -> dict:
        return device_info()


def set_budget(thread_instructions: int, seconds: float | None = None) -> None:
    """A launch past ``thread_instructions`` (or ``seconds`` of wall time) is a hang."""
    dev = _device()
    dev.budget = max(1, int(thread_instructions))
    dev.budget_seconds = float(seconds) if seconds else DEFAULT_HANG_SECONDS


def reset() -> None:
    """A fresh device: new memory, no findings (between unrelated tests in one process)."""
    global _dev
    _dev = None


# -- modules -------------------------------------------------------------------------------


# Decoded modules by their PTX text: the CLI sends each size of a test as its own request, each
# loading the kernel and its reference again (hgemm_mma's two modules took 0.12 s a load).
_MODULES: dict[str, emu.EmuModule] = {}
MODULE_CACHE = 8


def _decoded(ptx: str, memory: emu.Memory) -> emu.EmuModule:
    mod = _MODULES.pop(ptx, None)
    if mod is not None and mod.bound_to(memory):
        # loaded twice into one device memory (a kernel that is its own reference): a module
        # of its own, with its own .global variables, as a second cuModuleLoad gives
        _MODULES[ptx] = mod
        return emu.load(ptx)
    if mod is None:
        mod = emu.load(ptx)  # raises Refused: a refusal is not cached
    else:
        mod.forget_memories()  # bound to an earlier request's device memory
    _MODULES[ptx] = mod  # most recent last
    while len(_MODULES) > MODULE_CACHE:
        _MODULES.pop(next(iter(_MODULES)))
    return mod


class Module:
    def __init__(self, ptx: str):
        dev = _device()
        try:
            self.emu = _decoded(ptx, dev.memory)
        except emu.Refused as e:
            raise Refused(e) from None
        self.emu.bind(dev.memory)  # its .global variables, initialised, in the device's memory
        self.ptx = ptx


def load_ptx(ptx: str) -> Module:
    """The module from PTX text (raises Refused naming an unimplemented instruction)."""
    return Module(ptx)


def get_function(module: Module, name: str):
    try:
        module.emu.kernel(name)
    except (KeyError, LookupError, ValueError) as e:
        raise CudaError("get_function", "CUDA_ERROR_NOT_FOUND", f"no kernel {name}: {e}") from None
    return (module, name)


def with_null_params(fn, count: int):
    """``fn`` launched with ``count`` more trailing 64-bit parameters, all 0: the scratch
    pointers Triton appends to every entry, for a kernel that uses no scratch memory."""
    return (fn[0], fn[1], int(count))


def call(name: str, *args):
    """The two raw driver calls the harness and worker make: a module global's address and
    size, and unloading a module."""
    if name == "cuModuleGetGlobal":
        module, symbol = args[0], args[1]
        symbol = symbol.decode() if isinstance(symbol, bytes) else symbol
        try:
            addr = module.emu.global_address(symbol, _device().memory)
        except (KeyError, LookupError, ValueError):
            raise CudaError(name, "CUDA_ERROR_NOT_FOUND", f"no .global {symbol}") from None
        size = next(v.size for v in module.emu.program.globals if v.name == symbol)
        return int(addr), max(int(size), 1)
    if name == "cuModuleUnload":
        return None
    raise CudaError(name, "CUDA_ERROR_NOT_SUPPORTED", f"{name} is not emulated")


# -- memory --------------------------------------------------------------------------------


def alloc(nbytes: int) -> int:
    return int(_device().memory.alloc(max(int(nbytes), 1)))


def free(ptr: int) -> None:
    dev = _device()
    data = dev.moved.pop(ptr, ptr)
    dev.outputs.pop(data, None)
    dev.memory.free(data)


def name_buffer(base: int, guard: int, nbytes: int, name: str, output: bool = False) -> None:
    """The harness's buffer at ``base``: ``guard`` bytes of guard band, ``nbytes`` of data named
    ``name``, another guard band. Only the data is in bounds for a kernel, so an access to a
    guard band is reported as out of bounds of ``name`` (which element, which thread), not only
    seen afterwards as a damaged band; the harness still reads and writes the bands.
    ``output``: a pure output (role "out"): its poison is the harness's, not a value the kernel
    may use, so every launch starts with its bytes unwritten and a read of one before the
    kernel wrote it is reported (compute-sanitizer's initcheck, which a GPU run cannot do
    while the poison is there) as a warning: it never fails the case, since a GPU reads the
    poison there and passes or fails on the outputs' values alone."""
    dev = _device()
    mem = dev.memory
    data = base + guard
    if output and nbytes and hasattr(mem, "mark_unwritten"):
        dev.outputs[data] = nbytes
    try:
        i = mem._starts.index(base)
        a = mem.allocs[i]
        a.addr, a.nbytes, a.name = data, nbytes, name
        mem._starts[i] = data
        mem._arrays = None
        dev.moved[base] = data
    except (AttributeError, ValueError):  # a Memory without that layout: names only
        if hasattr(mem, "name"):
            mem.name(base, name)


def upload(ptr: int, host: np.ndarray) -> None:
    if host.nbytes:
        _device().memory.write(ptr, np.ascontiguousarray(host).view(np.uint8).reshape(-1))


def download(ptr: int, host: np.ndarray) -> np.ndarray:
    if host.nbytes:
        host.view(np.uint8).reshape(-1)[:] = _bytes(ptr, host.nbytes)
    return host


def _bytes(ptr: int, nbytes: int) -> np.ndarray:
    mem = _device().memory
    if hasattr(mem, "view"):  # no copy
        return mem.view(ptr, nbytes)
    return np.frombuffer(mem.read(ptr, nbytes), np.uint8)


def copy_d2d(dst: int, src: int, nbytes: int) -> None:
    if nbytes:
        _device().memory.write(dst, _bytes(src, nbytes).copy())


def memset8(ptr: int, value: int, nbytes: int) -> None:
    if nbytes:
        _device().memory.write(ptr, np.full(nbytes, value & 0xFF, np.uint8))


def synchronize() -> None:
    """Launches run to completion on the caller's thread: nothing is in flight."""


# -- launches ------------------------------------------------------------------------------


def launch(fn, grid, block, shared: int, args: list[np.ndarray]) -> None:
    """Run the kernel to completion. ``args`` as cuda_driver takes them (one 1-element array
    per parameter; its bytes are the .param value). Raises Hang past the budget."""
    module, name = fn[0], fn[1]
    dev = _device()
    params = [np.ascontiguousarray(a).tobytes() for a in args]
    params += [bytes(8)] * (fn[2] if len(fn) > 2 else 0)  # with_null_params
    for addr, nbytes in dev.outputs.items():
        dev.memory.mark_unwritten(addr, nbytes)
    try:
        result = emu.launch(
            module.emu, name, tuple(grid), tuple(block), int(shared), params, dev.memory,
            budget=_budget(dev.budget, dev.budget_seconds),
        )  # fmt: skip
    except emu.Refused as e:  # found only when the instruction is reached
        raise Refused(e) from None
    dev.launches += 1
    ran = int(getattr(result, "thread_instructions", 0) or 0)
    dev.thread_instructions += ran
    dev.steps += int(getattr(result, "warp_instructions", 0) or 0)
    dev.thread_work += int(getattr(result, "thread_work", 0) or 0)
    dev.opcodes.update(getattr(result, "opcodes", None) or ())
    dev.findings += [finding_dict(f) for f in getattr(result, "findings", None) or ()]
    if getattr(result, "hang", False):
        where = getattr(result, "hang_where", "") or ""
        raise Hang(dev.budget, ran, f" or {dev.budget_seconds:g} s (launch of {name}"
                   f"{': ' + where if where else ''})")  # fmt: skip
    if getattr(result, "trapped", False):  # the GPU would have faulted: the case fails
        first = next((f["text"] for f in dev.findings if f["severity"] == "error"), "")
        raise CudaError("launch", "EMULATOR_FAULT", first or "the kernel trapped")


def _budget(thread_instructions: int, seconds: float):
    return emu.Budget(max_thread_instructions=thread_instructions, seconds=seconds)


def take_findings() -> list[dict]:
    """What the launches since the last call saw, as dicts (tool, kind, severity, text, line,
    other_line): the shape of the sanitizer's findings, so the report and diagnostics read both."""
    dev = _device()
    found, dev.findings = dev.findings, []
    return found


# Why a warning does not fail its case, said with it (emulator/errors.WARNING_KINDS).
WHY_NOT_FAILED = "the verdict comes from the outputs' values"
WARNING_WHY = {
    "uninitialized-global": "the harness poisoned this output before the launch, so a GPU reads "
    "that poison here: the verdict comes from the outputs' values",
}


def finding_dict(f) -> dict:
    if isinstance(f, dict):
        d = dict(f)
    else:
        d = {
            k: getattr(f, k)
            for k in dir(f)
            if not k.startswith("_") and not callable(getattr(f, k))
        }
    kind = str(d.get("kind", "finding"))
    text = str(d.get("text") or d.get("message") or f)
    line = d.get("line")
    if line and f"line {line}" not in text:
        text = f"line {line}: {text}"
    who = [f"{k} {_dims(d[k])}" for k in ("thread", "block") if d.get(k) is not None]
    if who and "thread" not in text:  # which thread did it
        text += " (" + " of ".join(who) + ")"
    if int(d.get("count") or 1) > 1:
        text += f"; {d['count']} threads in all"
    severity = str(d.get("severity", "error"))
    said = f"{kind}: {text}" if kind not in text else text
    if severity == "warning":  # reported, never a failed case (emulator/errors.WARNING_KINDS)
        why = WARNING_WHY.get(kind, WHY_NOT_FAILED)
        said = f"warning (emulator-only, not a failure): {said}; {why}"
    out = {
        "tool": "emulator",
        "sanitizer_tool": str(d.get("tool", "")),  # which compute-sanitizer tool would say it
        "kind": kind,
        "severity": severity,
        "text": f"emulator: {said}",
        "line": line,
        "other_line": d.get("other_line"),
        # an error fails the case it was seen in; a warning never changes the verdict
        "fails_case": severity == "error",
        "emulator_only": True,  # seen by the emulator's checks, not by running on a GPU
    }
    for key in ("buffer", "element", "thread", "block", "address", "count"):
        if d.get(key) not in (None, ""):
            v = d[key]
            out[key] = v if isinstance(v, (int, str, float)) else str(tuple(v))
    return out


def statistics() -> dict:
    dev = _device()
    return {
        "launches": dev.launches,
        "thread_instructions": dev.thread_instructions,
        "steps": dev.steps,
        "thread_work": dev.thread_work,
        "opcodes": sorted(dev.opcodes),
    }


class Events:
    """The emulator has no clock: events record nothing and refuse to give a time."""

    def record_start(self) -> None:
        pass

    def record_end(self) -> None:
        pass

    def elapsed_ms(self) -> float:
        raise CudaError("elapsed_ms", "EMULATOR_NO_CLOCK", "the emulator measures no time")


def _dims(v) -> str:
    if isinstance(v, (tuple, list)):
        return "(" + ",".join(str(int(x)) for x in v) + ")"
    return str(v)
