"""What GPU and driver this machine has, asked in a child process.

The probe runs ``cuInit`` in a separate interpreter so the language server never loads the
driver itself (a driver fault must not take the editor's server down) and so the answer — or
the reason there is none — is a plain dataclass.
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass

_PROBE = r"""
import json
out = {}
try:
    from cuda.bindings import driver as cu
except Exception as e:
    print(json.dumps({"error": f"cuda-bindings not importable: {e}"})); raise SystemExit
try:
    (err,) = cu.cuInit(0)
except Exception as e:
    print(json.dumps({"error": f"{type(e).__name__}: {e}"})); raise SystemExit
if err != cu.CUresult.CUDA_SUCCESS:
    _, name = cu.cuGetErrorName(err)
    print(json.dumps({"error": f"cuInit failed: {name.decode() if isinstance(name, bytes) else name}"})); raise SystemExit
err, ver = cu.cuDriverGetVersion()
out["driver_version"] = ver
err, count = cu.cuDeviceGetCount()
out["devices"] = []
for i in range(count):
    _, dev = cu.cuDeviceGet(i)
    _, name = cu.cuDeviceGetName(64, dev)
    _, major = cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    _, minor = cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    _, mem = cu.cuDeviceTotalMem(dev)
    out["devices"].append({"name": name.split(b"\0")[0].decode(), "sm": f"sm_{major}{minor}", "memory": mem})
print(json.dumps(out))
"""


@dataclass(frozen=True)
class GpuInfo:
    available: bool
    reason: str = ""  # why not, when not
    name: str = ""
    arch: str = ""
    driver_version: int = 0  # 13000 for CUDA 13.0
    memory_bytes: int = 0

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


# PTX ISA shipped with each CUDA 12 release (PTX ISA document, "Release history").
_CUDA12_ISA = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 5, 8: 7, 9: 8}


def max_isa_for_driver(driver_version: int) -> tuple[int, int] | None:
    """Highest PTX ISA the driver's JIT accepts: CUDA 13.x → 9.x (docs/gpu-facts.md: the 13.0 driver takes
    ≤ 9.0 and refuses 9.1), CUDA 12.x → 8.x."""
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
    worker both pass their raw error (``"TypeName: message"``) through this."""
    if "driver library" in error or "libcuda" in error or "DynamicLibNotFound" in error:
        return "the NVIDIA driver library (libcuda.so) is not installed on this machine"
    if "CUDA_ERROR_NO_DEVICE" in error:
        return "the NVIDIA driver is installed but sees no CUDA device (CUDA_ERROR_NO_DEVICE)"
    if error.startswith(("ImportError", "ModuleNotFoundError")) or "not importable" in error:
        return f"cuda-python is not importable: {error.split(': ', 1)[-1]}"
    return error


@functools.lru_cache(maxsize=1)
def probe_gpu(timeout: float = 30.0) -> GpuInfo:
    from .process import run_capped  # its whole process group is killed on timeout

    try:
        proc = run_capped([sys.executable, "-c", _PROBE], timeout=timeout)
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
    if not data.get("devices"):
        return GpuInfo(
            False,
            no_gpu_reason("CUDA_ERROR_NO_DEVICE"),
            driver_version=data.get("driver_version", 0),
        )
    dev = data["devices"][0]
    return GpuInfo(True, "", dev["name"], dev["sm"], data["driver_version"], dev["memory"])
