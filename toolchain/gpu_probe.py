"""What GPU and driver this machine has: the one probe.

``read_device`` asks the CUDA driver (cuda.bindings, after ``cuInit``) for the device and the
driver version; it is the only code that does. ``probe_gpu`` runs it in a child process
(``python -m ptxls.toolchain.gpu_probe``) so the language server never loads the driver itself
(a driver fault must not take the editor's server down) and the answer — or the reason there is
none — is a plain dataclass; the GPU-test worker, which holds a context anyway, calls it
in-process for its hello. What a driver version means for the PTX its JIT takes
(``max_isa_for_driver``) is here too, so it is measured wherever it is asked.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GpuInfo:
    available: bool
    reason: str = ""  # why not, when not
    name: str = ""
    arch: str = ""
    driver_version: int = 0  # 13000 for CUDA 13.0 (cuDriverGetVersion)
    memory_bytes: int = 0
    cc: tuple[int, int] = (0, 0)  # compute capability

    @property
    def driver_cuda(self) -> str:
        return (
            f"{self.driver_version // 1000}.{(self.driver_version % 1000) // 10}"
            if self.driver_version
            else ""
        )

    @property
    def max_ptx_isa(self) -> tuple[int, int] | None:
        return max_isa_for_driver(self.driver_version) if self.driver_version else None

    def device_dict(self) -> dict[str, object]:
        """The device as the GPU-test worker reports it (hello, and every result)."""
        return {
            "name": self.name,
            "cc": list(self.cc),
            "arch": self.arch,
            "driver_version": self.driver_version,
            "driver_cuda": self.driver_cuda,
            "max_ptx_isa": list(self.max_ptx_isa or (0, 0)),
        }


def read_device(cu: Any, ordinal: int = 0) -> GpuInfo:  # cu: cuda.bindings.driver (untyped)
    """Device ``ordinal`` and the driver, asked of ``cu`` (cuda.bindings.driver, after cuInit).
    A failing call raises RuntimeError naming it."""

    def ask(call: str, *args: Any) -> Any:
        err, *out = getattr(cu, call)(*args)
        if err != cu.CUresult.CUDA_SUCCESS:
            _, name = cu.cuGetErrorName(err)
            raise RuntimeError(
                f"{call} failed: {name.decode() if isinstance(name, bytes) else name}"
            )
        return out[0] if len(out) == 1 else out

    driver = int(ask("cuDriverGetVersion"))
    if ask("cuDeviceGetCount") == 0:
        # the driver answered, so it is loaded: the error's own words
        return GpuInfo(False, _reason_from_error("CUDA_ERROR_NO_DEVICE"), driver_version=driver)
    dev = ask("cuDeviceGet", ordinal)
    attr = cu.CUdevice_attribute
    major = int(ask("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    minor = int(ask("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    return GpuInfo(
        True,
        "",
        ask("cuDeviceGetName", 256, dev).split(b"\0")[0].decode(),
        f"sm_{major}{minor}",
        driver,
        int(ask("cuDeviceTotalMem", dev)),
        (major, minor),
    )


# PTX ISA shipped with each CUDA 12 release (PTX ISA document, "Release history").
_CUDA12_ISA = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 5, 8: 7, 9: 8}


def max_isa_for_driver(driver_version: int) -> tuple[int, int] | None:
    """Highest PTX ISA the driver's JIT accepts: CUDA 13.x → 9.x (docs/gpu-facts.md: the 13.0
    driver takes ≤ 9.0 and refuses 9.1), CUDA 12.x → 8.x."""
    major, minor = driver_version // 1000, (driver_version % 1000) // 10
    if major >= 13:
        return (9 + (major - 13), minor)
    if major == 12:
        return (8, _CUDA12_ISA.get(minor, minor))
    if major == 11:
        return (7, minor)
    return None


def no_gpu_reason(error: str) -> str:
    """Why there is no GPU, worded one way wherever it is shown (doctor, demo, ``ptxls test``,
    the GPU-test hover, the status bar, test skip reasons): the probe here and the GPU-test
    worker both pass their raw error (``"TypeName: message"``) through this. With no driver
    loaded at all that is the reason, whatever the child met first (the probe does not start)."""
    return no_driver_loaded() or _reason_from_error(error)


def _reason_from_error(error: str) -> str:
    if "driver library" in error or "libcuda" in error or "DynamicLibNotFound" in error:
        return "the NVIDIA driver library (libcuda.so) is not installed on this machine"
    if "CUDA_ERROR_NO_DEVICE" in error:
        return "the NVIDIA driver is installed but sees no CUDA device (CUDA_ERROR_NO_DEVICE)"
    if error.startswith(("ImportError", "ModuleNotFoundError")) or "not importable" in error:
        return f"cuda-python is not importable: {error.split(': ', 1)[-1]}"
    return error


# Where the NVIDIA kernel driver shows itself on Linux: its control node and first device, its
# /proc folder, and WSL2's GPU paravirtualisation node (CUDA there goes through /dev/dxg).
DRIVER_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia", "/dev/dxg")


def no_driver_loaded() -> str:
    """Why no CUDA device can be reached, when the answer needs no child: on Linux with none of
    DRIVER_NODES there is no kernel driver for libcuda to talk to. Empty where the child must ask
    (a driver is there, or another system). It saves the child's start (~80 ms of CPU) at every
    server and CLI start on a machine without a GPU, and touches no driver library."""
    if sys.platform != "linux" or any(os.path.exists(p) for p in DRIVER_NODES):
        return ""
    return "no NVIDIA driver is loaded on this machine (no /dev/nvidiactl or /proc/driver/nvidia)"


@functools.lru_cache(maxsize=1)
def probe_gpu(timeout: float = 30.0) -> GpuInfo:
    """This machine's GPU 0, asked once per process (see the module docstring): in a child,
    unless no driver is loaded at all."""
    reason = no_driver_loaded()
    return GpuInfo(False, reason) if reason else probe_in_child(timeout)


def probe_in_child(timeout: float = 30.0) -> GpuInfo:
    """The driver's answer from ``python -m ptxls.toolchain.gpu_probe``, or why there is none."""
    # Isolated, in a private folder: a workspace's cuda/ or numpy.py is never imported
    from .isolated import private_cwd, python_command
    from .process import run_capped  # its whole process group is killed on timeout

    command = python_command("ptxls.toolchain.gpu_probe")
    try:
        proc = run_capped(command, timeout=timeout, cwd=private_cwd())
    except OSError as e:
        return GpuInfo(False, f"could not start the probe: {e}")
    if proc.timed_out:
        return GpuInfo(False, f"the CUDA driver did not answer within {timeout:g} s")
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        return GpuInfo(
            False, f"the GPU probe failed: {tail[-1] if tail else f'exit {proc.returncode}'}"
        )
    if "error" in data:
        return GpuInfo(False, no_gpu_reason(data["error"]))
    fields = {f.name for f in dataclasses.fields(GpuInfo)}
    data = {k: v for k, v in data.items() if k in fields}
    data["cc"] = tuple(data.get("cc") or (0, 0))
    return GpuInfo(**data)


def _child() -> dict[str, Any]:
    """What ``probe_gpu``'s child prints: the GpuInfo's fields, or {"error": "Type: message"}."""
    try:
        from cuda.bindings import driver as cu
    except Exception as e:  # every way of having no bindings becomes a reason
        return {"error": f"cuda-bindings not importable: {e}"}
    try:
        (err,) = cu.cuInit(0)
        if err != cu.CUresult.CUDA_SUCCESS:
            _, name = cu.cuGetErrorName(err)
            return {"error": f"cuInit failed: {name.decode() if isinstance(name, bytes) else name}"}
        return dataclasses.asdict(read_device(cu))
    except Exception as e:  # every driver failure becomes a reason
        return {"error": f"{type(e).__name__}: {e}"}


if __name__ == "__main__":
    print(json.dumps(_child()))
