"""The few CUDA driver calls the worker makes, through cuda-python (cuda.bindings.driver), with
every return code checked. Only the worker process imports this: a kernel that faults leaves the
context unusable until the process exits (docs/gpu-facts.md), so nothing long-lived may hold one."""

from __future__ import annotations

import numpy as np

try:  # cuda-bindings ≥ 12.6 layout; older releases exposed cuda.cuda
    from cuda.bindings import driver as cu
except ImportError:  # pragma: no cover - depends on the installed cuda-python
    from cuda import cuda as cu

# Errors after which the context is dead for this process (docs/gpu-facts.md): the worker must be replaced.
STICKY = {
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ASSERT",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_TRAP",
    "CUDA_ERROR_LAUNCH_TIMEOUT", "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    "CUDA_ERROR_UNKNOWN",
}  # fmt: skip


class CudaError(Exception):
    def __init__(self, call: str, code):
        self.call = call
        self.name = _name(code)
        self.text = _text(code)
        self.sticky = self.name in STICKY
        super().__init__(f"{self.name} ({self.text}) from {call}")


def _name(code) -> str:
    try:
        err, s = cu.cuGetErrorName(code)
        return s.decode() if err == cu.CUresult.CUDA_SUCCESS else str(code)
    except Exception:  # a name lookup must never hide the real error
        return str(code)


def _text(code) -> str:
    try:
        err, s = cu.cuGetErrorString(code)
        return s.decode() if err == cu.CUresult.CUDA_SUCCESS else ""
    except Exception:
        return ""


def call(name: str, *args):
    """Call cu.<name>(*args); raise CudaError unless it succeeded; return the outputs."""
    out = getattr(cu, name)(*args)
    code, rest = out[0], out[1:]
    if code != cu.CUresult.CUDA_SUCCESS:
        raise CudaError(name, code)
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


class Context:
    def __init__(self, ordinal: int = 0):
        from ptxls.toolchain.gpu_probe import read_device  # the one probe, asked in-process

        call("cuInit", 0)
        self.device_info = read_device(cu, ordinal)
        if not self.device_info.available:
            raise RuntimeError("cuInit succeeded but the driver sees no CUDA device")
        self.name, self.cc = self.device_info.name, self.device_info.cc
        self.driver = self.device_info.driver_version
        self.device = call("cuDeviceGet", ordinal)
        self.ctx = call("cuDevicePrimaryCtxRetain", self.device)
        call("cuCtxSetCurrent", self.ctx)

    def info(self) -> dict:
        return self.device_info.device_dict()


def load_cubin(image: bytes):
    return call("cuModuleLoadData", image)


def load_ptx_jit(ptx: str) -> tuple[object | None, str, CudaError | None]:
    """Driver JIT of PTX text with its error and info logs captured (same message shape as
    standalone ptxas). Returns (module or None, log, error or None)."""
    size = 1 << 16
    err_buf, info_buf = bytearray(size), bytearray(size)
    opt = cu.CUjit_option
    opts = [
        opt.CU_JIT_ERROR_LOG_BUFFER, opt.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        opt.CU_JIT_INFO_LOG_BUFFER, opt.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
    ]  # fmt: skip
    vals = [err_buf, size, info_buf, size]
    out = cu.cuModuleLoadDataEx(ptx.encode() + b"\0", len(opts), opts, vals)
    log = "\n".join(
        b.split(b"\0")[0].decode(errors="replace").strip() for b in (err_buf, info_buf)
    ).strip()
    if out[0] != cu.CUresult.CUDA_SUCCESS:
        return None, log, CudaError("cuModuleLoadDataEx (driver JIT)", out[0])
    return out[1], log, None


def get_function(module, name: str):
    return call("cuModuleGetFunction", module, name.encode())


def alloc(nbytes: int) -> int:
    return int(call("cuMemAlloc", max(nbytes, 1)))


def free(ptr: int) -> None:
    call("cuMemFree", ptr)


def upload(ptr: int, host: np.ndarray) -> None:
    if host.nbytes:
        call("cuMemcpyHtoD", ptr, host.ctypes.data, host.nbytes)


def download(ptr: int, host: np.ndarray) -> np.ndarray:
    if host.nbytes:
        call("cuMemcpyDtoH", host.ctypes.data, ptr, host.nbytes)
    return host


def copy_d2d(dst: int, src: int, nbytes: int) -> None:
    if nbytes:
        call("cuMemcpyDtoD", dst, src, nbytes)


def memset8(ptr: int, value: int, nbytes: int) -> None:
    call("cuMemsetD8", ptr, value, nbytes)


def memset16(ptr: int, value: int, nbytes: int) -> None:
    """``nbytes`` (a multiple of 2) as 16-bit words of ``value``: a half-precision poison."""
    call("cuMemsetD16", ptr, value, nbytes // 2)


def memset32(ptr: int, value: int, nbytes: int) -> None:
    """``nbytes`` (a multiple of 4) as 32-bit words of ``value``: float32's NaN poison."""
    call("cuMemsetD32", ptr, value, nbytes // 4)


def synchronize() -> None:
    call("cuCtxSynchronize")


def launch(
    fn, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int, args: list[np.ndarray]
) -> None:
    """``args``: one 1-element numpy array per kernel parameter holding its value (pointers as
    uint64); the driver reads each through the pointer array built here."""
    ptrs = np.array([a.ctypes.data for a in args], dtype=np.uint64)
    if shared > 48 * 1024:  # above 48 KB a kernel must opt in (e.g. a 4-stage wgmma GEMM)
        attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        call("cuFuncSetAttribute", fn, attr, shared)
    call("cuLaunchKernel", fn, *grid, *block, shared, 0, ptrs.ctypes.data if args else 0, 0)


class Events:
    def __init__(self):
        self.start = call("cuEventCreate", 0)
        self.end = call("cuEventCreate", 0)

    def record_start(self) -> None:
        call("cuEventRecord", self.start, 0)

    def record_end(self) -> None:
        call("cuEventRecord", self.end, 0)

    def elapsed_ms(self) -> float:
        call("cuEventSynchronize", self.end)
        return float(call("cuEventElapsedTime", self.start, self.end))
