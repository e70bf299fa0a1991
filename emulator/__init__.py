"""A functional PTX emulator on the CPU (numpy): one kernel launch, warps of 32 lanes run
in lock-step with active masks, every access checked. See emulator/README.md.

    mod = emulator.load(ptx_text)                     # Refused if something is not emulated
    mem = emulator.Memory(); a = mem.alloc(n * 4, "a"); mem.write(a, x.tobytes())
    res = emulator.launch(mod, "vec_add", grid, block, 0, [a.to_bytes(8, "little"), ...], mem)
    res.findings, res.hang, res.thread_instructions
"""

from .errors import Budget, Finding, LaunchResult, Refused
from .launch import Execution, launch
from .memory import Memory
from .module import EmuModule, load

__all__ = [
    "Budget",
    "EmuModule",
    "Execution",
    "Finding",
    "LaunchResult",
    "Memory",
    "Refused",
    "launch",
    "load",
]
