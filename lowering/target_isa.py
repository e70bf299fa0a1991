"""Which ``.version`` / ``.target`` to ask the model for: measured, never a constant.

PTX is the deliverable, so it must (1) assemble with the ptxas that checks it and (2) load where
it runs. Each PTX ISA version only knows the targets released by then (``sm_100`` needs ISA
8.6, ``sm_120`` 8.7), each ptxas accepts ISA versions up to its own (CUDA 13.0: 9.0), and each
driver's JIT loads PTX up to its CUDA release's ISA (CUDA 13.0 driver: 9.0, refuses 9.1). So:

1. the cap is the highest ISA any usable ptxas accepts (they are asked: ``toolchain``);
2. when a GPU is present and the requested target would run on it, the cap is lowered to what
   its driver's JIT takes;
3. ptxas is asked whether ``.version cap`` / ``.target arch`` assembles; when the driver's cap
   is too low for the target (a newer GPU than this one), the ptxas cap is used and the note
   says the local driver could not JIT it anyway. A target no ptxas knows is a problem whose
   message lists the targets it does accept.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ptxls.diagnostics.isa import sm_number

_PROBE = ".version {isa}\n.target {arch}\n.address_size 64\n.visible .entry ptxls_probe()\n{{\n    ret;\n}}\n"


@dataclass(frozen=True)
class TargetChoice:
    arch: str
    isa: str  # "9.0"
    why: str  # one line for the transcript: where the number came from
    problem: str = ""  # non-empty: no .version works for this target here (the message says why)


_cache: dict[tuple, TargetChoice] = {}


def _fmt(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


async def _driver_limit() -> tuple[tuple[int, int] | None, str]:
    """(max ISA of the local driver's JIT, the GPU's sm_XX), or (None, "") without a GPU."""
    try:
        from ptxls.toolchain.gpu_probe import probe_gpu

        info = await asyncio.to_thread(probe_gpu)
    except Exception:  # no probe: no driver limit to honour
        return None, ""
    if not info.available:
        return None, ""
    return info.max_ptx_isa, info.arch


async def _assembles(isa: str, arch: str, ptxas_path: str | None) -> tuple[bool, str]:
    from ptxls.toolchain.discovery import find_ptxas
    from ptxls.toolchain.ptxas import run_ptxas

    major, minor = (int(x) for x in isa.split("."))
    try:
        tool = await asyncio.to_thread(find_ptxas, ptxas_path, needs_isa=(major, minor))
        run = await run_ptxas(_PROBE.format(isa=isa, arch=arch), tool=tool, arch=arch, timeout=30)
    except Exception as e:  # no ptxas: the loop says so when it checks
        return False, str(e)
    text = (run.stderr or run.stdout or "").strip()
    return run.returncode == 0, text.splitlines()[-1] if text else ""


async def choose_target(
    arch: str, *, ptxas_path: str | None = None, use_driver: bool = True
) -> TargetChoice:
    """The ``.version`` to ask for with ``.target arch``, measured (see the module docstring).
    Cached per (arch, ptxas, driver) for the life of the process."""
    from ptxls.toolchain.discovery import all_tools

    driver_max, gpu_arch = await _driver_limit() if use_driver else (None, "")
    key = (arch, ptxas_path, driver_max, gpu_arch)
    if key in _cache:
        return _cache[key]
    tools = await asyncio.to_thread(all_tools, "ptxas", ptxas_path)
    isas = [t.max_ptx_isa for t in tools if t.max_ptx_isa]
    if not isas:
        choice = TargetChoice(arch, "8.0", "no ptxas answered the ISA probe; asking for 8.0")
        _cache[key] = choice
        return choice
    ptxas_max = max(isas)
    cap, why = ptxas_max, f"the highest PTX ISA the local ptxas accepts ({_fmt(ptxas_max)})"
    runs_here = (
        driver_max is not None
        and sm_number(gpu_arch) is not None
        and (sm_number(arch) or 0) <= (sm_number(gpu_arch) or 0)
    )
    if runs_here and driver_max is not None and driver_max < cap:
        cap = driver_max
        why = (
            f"the highest PTX ISA both the local ptxas ({_fmt(ptxas_max)}) and this GPU's "
            f"driver JIT ({_fmt(driver_max)}, {gpu_arch}) accept"
        )
    ok, message = await _assembles(_fmt(cap), arch, ptxas_path)
    if ok:
        choice = TargetChoice(arch, _fmt(cap), why)
    elif cap != ptxas_max and (await _assembles(_fmt(ptxas_max), arch, ptxas_path))[0]:
        choice = TargetChoice(
            arch,
            _fmt(ptxas_max),
            f"{arch} needs a newer PTX ISA than this GPU's driver JIT takes "
            f"({_fmt(cap)}); asking for ptxas's {_fmt(ptxas_max)}",
        )
    else:
        from .ptx_check import accepted_targets

        names = await asyncio.to_thread(accepted_targets, ptxas_path)
        listed = f" It accepts: {', '.join(names)}." if names else ""
        choice = TargetChoice(
            arch,
            _fmt(cap),
            why,
            problem=f"ptxas does not accept .target {arch} ({message}).{listed}",
        )
    _cache[key] = choice
    return choice
