"""What the emulator hands back besides values: a refusal before a launch, and findings."""

from __future__ import annotations

from dataclasses import dataclass, field


class Refused(Exception):
    """The module cannot be emulated faithfully: an instruction the emulator does not implement
    (``wgmma``, TMA, textures…), or PTX it cannot read. Raised by ``emulator.load`` before any
    launch, so nothing ever runs wrongly."""

    def __init__(self, instruction: str, line: int | None, why: str) -> None:
        self.instruction = instruction
        self.line = line  # 1-based PTX line, None when the problem has no line
        self.why = why
        where = f"line {line}: " if line is not None else ""
        super().__init__(f"{where}{instruction}: {why}" if instruction else f"{where}{why}")


# Finding kinds, named like compute-sanitizer's tools report them where one exists.
OUT_OF_BOUNDS = "out-of-bounds"
MISALIGNED = "misaligned"
UNINIT_SHARED = "uninitialized-shared"
UNINIT_GLOBAL = "uninitialized-global"
UNINIT_REGISTER = "uninitialized-register"
SHARED_RACE = "shared-race"
DIVERGENT_BARRIER = "divergent-barrier"
SYNC_MASK = "sync-mask"
HANG = "hang"
FREED = "use-after-free"
INVALID_ADDRESS = "invalid-address"
TRAP = "trap"

# Findings that are reported (on their line, by the emulator only) but never fail a test case,
# because a GPU running the same launch could not fail on them:
# - a read of a global buffer nothing in the launch wrote: the harness poisoned its pure outputs
#   before the launch, so from the PTX's point of view the bytes are defined (the host wrote
#   them) and a GPU reads that poison; whether the kernel's outputs are right is what the
#   harness's comparison decides, on both devices alike (a poison that reaches an output fails
#   there: "never written");
# - a register read on a path that never wrote it: often a value the kernel never uses.
# A read of shared memory never written is an error: shared memory starts undefined (ISA,
# "State Spaces"), so nothing can make that value right.
WARNING_KINDS = frozenset({UNINIT_GLOBAL, UNINIT_REGISTER})

# Which compute-sanitizer tool would report a kind (for records shaped like the sanitizer's).
TOOL_OF_KIND = {
    OUT_OF_BOUNDS: "memcheck",
    MISALIGNED: "memcheck",
    FREED: "memcheck",
    INVALID_ADDRESS: "memcheck",
    TRAP: "memcheck",
    UNINIT_SHARED: "initcheck",
    UNINIT_GLOBAL: "initcheck",
    UNINIT_REGISTER: "initcheck",
    SHARED_RACE: "racecheck",
    DIVERGENT_BARRIER: "synccheck",
    SYNC_MASK: "synccheck",
    HANG: "",
}


@dataclass
class Finding:
    """One problem seen while running, at a PTX line. Fields follow the sanitizer's records
    (frontend/sanitizer_report.SanitizerRecord) so a caller can turn one into the other:
    ``kind``, ``line`` (1-based), ``block``/``thread`` (3-D), ``space``, ``access``,
    ``address``, ``size``; plus what only an emulator knows: the buffer and element."""

    kind: str
    line: int | None
    message: str
    function: str = ""
    instruction: str = ""
    block: tuple[int, int, int] | None = None
    thread: tuple[int, int, int] | None = None
    space: str = ""  # global | shared | local | param | register
    access: str = ""  # read | write | atomic
    address: int | None = None
    size: int | None = None
    buffer: str = ""  # the allocation's name (global), or the shared variable
    element: int | None = None  # index in the buffer, in units of the access size
    other_thread: tuple[int, int, int] | None = None  # the other side of a race
    other_line: int | None = None
    count: int = 1  # threads/bytes that hit the same problem at this line

    @property
    def tool(self) -> str:
        return TOOL_OF_KIND.get(self.kind, "")

    @property
    def severity(self) -> str:
        return "warning" if self.kind in WARNING_KINDS else "error"


@dataclass
class Budget:
    """When a launch is stopped and called a hang: thread-instructions executed, or seconds."""

    max_thread_instructions: int = 2_000_000_000
    seconds: float = 60.0


@dataclass
class LaunchResult:
    findings: list[Finding] = field(default_factory=list)
    hang: bool = False
    hang_where: str = ""  # "line 120 (bra SPIN), 3 threads of block (1,0,0) …"
    thread_instructions: int = 0
    warp_instructions: int = 0  # scheduler steps: one instruction for one group of threads
    # the engine's work, per thread of each step by instruction class (simt.cost_of): what a
    # harness sizes cases by (deterministic, unlike its time)
    thread_work: int = 0
    wall_seconds: float = 0.0
    trapped: bool = False

    @property
    def ok(self) -> bool:
        return not self.hang and not self.trapped and not self.findings
