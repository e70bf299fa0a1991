"""The one GPU probe (ptxls.toolchain.gpu_probe.read_device): the status bar, ``ptxls doctor``,
the -arch choice, the driver's JIT limit for lowering and the GPU-test worker's hello all come
from it. Driven here with a stand-in for cuda.bindings.driver (no GPU on CI) and, for real,
through its child process."""

from __future__ import annotations

import types

import pytest

from ptxls.toolchain import arch, gpu_probe
from ptxls.toolchain.gpu_probe import (
    GpuInfo,
    max_isa_for_driver,
    probe_gpu,
    probe_in_child,
    read_device,
)


def fake_driver(count: int = 1, fail: str = "") -> types.SimpleNamespace:
    """The calls read_device makes, answering like an H200 under the CUDA 13.0 driver."""
    ok, bad = "SUCCESS", "CUDA_ERROR_INVALID_DEVICE"
    attrs = types.SimpleNamespace(
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR="major",
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR="minor",
    )

    def answer(name, *values):
        return lambda *args: (bad if name == fail else ok, *values)

    return types.SimpleNamespace(
        CUresult=types.SimpleNamespace(CUDA_SUCCESS=ok),
        CUdevice_attribute=attrs,
        cuGetErrorName=lambda err: (ok, err.encode()),
        cuDriverGetVersion=answer("cuDriverGetVersion", 13000),
        cuDeviceGetCount=answer("cuDeviceGetCount", count),
        cuDeviceGet=answer("cuDeviceGet", "dev0"),
        cuDeviceGetName=answer("cuDeviceGetName", b"NVIDIA H200\0\0\0"),
        cuDeviceGetAttribute=lambda which, dev: (ok, {"major": 9, "minor": 0}[which]),
        cuDeviceTotalMem=answer("cuDeviceTotalMem", 150 * 2**30),
    )


def test_read_device_is_what_every_caller_sees():
    info = read_device(fake_driver())
    assert (info.available, info.name, info.arch, info.cc) == (True, "NVIDIA H200", "sm_90", (9, 0))
    assert (info.driver_cuda, info.max_ptx_isa) == ("13.0", (9, 0))  # measured, not assumed
    # the worker's hello carries the same facts in the shape reports read
    assert info.device_dict() == {
        "name": "NVIDIA H200",
        "cc": [9, 0],
        "arch": "sm_90",
        "driver_version": 13000,
        "driver_cuda": "13.0",
        "max_ptx_isa": [9, 0],
    }


def test_read_device_without_devices_or_with_a_failing_call():
    none = read_device(fake_driver(count=0))
    assert not none.available and "CUDA_ERROR_NO_DEVICE" in none.reason
    assert none.driver_version == 13000
    with pytest.raises(RuntimeError, match="cuDeviceGetName failed: CUDA_ERROR_INVALID_DEVICE"):
        read_device(fake_driver(fail="cuDeviceGetName"))


@pytest.mark.parametrize(
    ("driver", "isa"), [(13000, (9, 0)), (13010, (9, 1)), (12040, (8, 4)), (12080, (8, 7))]
)
def test_the_drivers_jit_limit_follows_its_version(driver, isa):
    assert max_isa_for_driver(driver) == isa
    assert GpuInfo(True, driver_version=driver).max_ptx_isa == isa


def test_the_arch_comes_from_the_same_probe(monkeypatch):
    h200 = GpuInfo(True, "", "NVIDIA H200", "sm_90", 13000, cc=(9, 0))
    monkeypatch.setattr(gpu_probe, "probe_gpu", lambda: h200)
    assert arch.local_gpu_arch() == "sm_90" and arch.choose_arch(None, None) == "sm_90"
    assert arch.choose_arch(None, "sm_80") == "sm_80"
    monkeypatch.setattr(gpu_probe, "probe_gpu", lambda: GpuInfo(False, "no driver"))
    assert arch.local_gpu_arch() is None and arch.choose_arch(None, None) == arch.DEFAULT_ARCH


def test_the_probe_child_does_not_import_from_the_current_directory(tmp_path, monkeypatch):
    # A workspace with its own "cuda" package: the probe must not run it (python -P).
    marker = tmp_path / "ran"
    pkg = tmp_path / "cuda" / "bindings"
    pkg.mkdir(parents=True)
    (tmp_path / "cuda" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "driver.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.chdir(tmp_path)
    info = probe_in_child(timeout=60)  # the child itself, even where no driver is loaded
    assert not marker.exists()
    assert info.available or info.reason  # a GPU here, or the reason there is none


def test_the_probe_on_this_machine_gives_an_answer_or_a_reason():
    info = probe_gpu()
    if info.available:
        assert info.arch.startswith("sm_") and info.max_ptx_isa and info.cc[0] >= 5
    else:
        assert info.reason and "Traceback" not in info.reason


def test_without_a_driver_node_the_answer_needs_no_child(monkeypatch, tmp_path):
    from ptxls.toolchain import gpu_probe

    started = []
    monkeypatch.setattr(gpu_probe, "probe_in_child", lambda timeout=30.0: started.append(1))
    monkeypatch.setattr(gpu_probe.sys, "platform", "linux")
    monkeypatch.setattr(gpu_probe, "DRIVER_NODES", (str(tmp_path / "nvidiactl"),))
    info = probe_gpu.__wrapped__()
    assert not info.available and "no NVIDIA driver is loaded" in info.reason and not started
    # a driver node present: the child is asked, whatever it answers
    (tmp_path / "nvidiactl").touch()
    probe_gpu.__wrapped__()
    assert started == [1]
    # elsewhere than Linux the nodes mean nothing: the child asks
    monkeypatch.setattr(gpu_probe.sys, "platform", "win32")
    (tmp_path / "nvidiactl").unlink()
    probe_gpu.__wrapped__()
    assert started == [1, 1]
