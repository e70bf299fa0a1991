"""NVRTC through cuda-bindings: compile CUDA C++ to PTX in-process when nvcc is absent."""

from __future__ import annotations


class NvrtcUnavailable(Exception):
    pass


def compile_to_ptx(
    text: str, arch: str, include_dirs: list[str], name: str = "input.cu"
) -> tuple[bool, str, str]:
    """(ok, ptx, log). Raises NvrtcUnavailable when libnvrtc cannot be loaded."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:  # pragma: no cover - cuda-bindings is a dependency
        raise NvrtcUnavailable(f"cuda-bindings is not installed: {e}") from None
    try:
        err, prog = nvrtc.nvrtcCreateProgram(text.encode(), name.encode(), 0, [], [])
    except Exception as e:  # RuntimeError "Failure finding libnvrtc.so.13"
        raise NvrtcUnavailable(
            f"NVRTC is not available ({e}); pip install nvidia-cuda-nvrtc"
        ) from None
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise NvrtcUnavailable(f"nvrtcCreateProgram failed: {err}")
    opts = [f"--gpu-architecture={arch.replace('sm_', 'compute_')}".encode()]
    opts += [f"-I{d}".encode() for d in include_dirs]
    (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, log)
    ptx = ""
    ok = res == nvrtc.nvrtcResult.NVRTC_SUCCESS
    if ok:
        _, psize = nvrtc.nvrtcGetPTXSize(prog)
        buf = b" " * psize
        nvrtc.nvrtcGetPTX(prog, buf)
        ptx = buf.rstrip(b"\0 ").decode()
    nvrtc.nvrtcDestroyProgram(prog)
    return ok, ptx, log.rstrip(b"\0 ").decode(errors="replace")


def compile_to_ptx_log(text: str, arch: str, include_dirs: list[str]) -> tuple[bool, str]:
    ok, _ptx, log = compile_to_ptx(text, arch, include_dirs)
    return ok, log
