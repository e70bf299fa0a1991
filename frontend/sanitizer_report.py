"""Reading compute-sanitizer's text output (memcheck, racecheck, initcheck, synccheck).

Every line compute-sanitizer prints starts with ``=========``. A record is a head line with no
indent (``Invalid __shared__ write of size 4 bytes``, ``Error: Race reported between Write access
at k+0x90 in k.ptx:41``) followed by indented lines (``at k+0x1b0 in k.ptx:31``, ``by thread
(255,0,0) in block (3,0,0)``, ``Address 0x400 is out of bounds``, ``and Read access at …``); an
empty ``=========`` line or the next head ends it. The summaries (``ERROR SUMMARY: 3 errors``,
``RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)``) and the tool's own failures
(``Error: process didn't terminate successfully``, ``Internal Sanitizer Error: …``) are read
too. Lines without the prefix are the checked program's own output and are skipped.

Text in, dataclasses out: stdlib only, no IO, never raises (text it cannot place becomes a
record of kind ``other`` with its raw lines).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PREFIX = re.compile(r"^\s*={5,}( ?)")

# kinds
INVALID_ACCESS = "invalid-access"  # memcheck: out of bounds / misaligned global, shared, local
UNINITIALIZED = "uninitialized-read"  # initcheck
UNUSED = "unused-memory"  # initcheck --track-unused-memory
RACE = "race"  # racecheck analysis: two source locations
HAZARD = "hazard"  # racecheck hazard: one shared byte, two threads
BARRIER = "barrier"  # synccheck
HARDWARE = "hardware-exception"  # memcheck: the GPU stopped a warp (illegal instruction, ...)
API_ERROR = "api-error"  # a CUDA call returned an error
MALLOC = "malloc-error"  # device-side malloc/free
LEAK = "leak"
TOOL_ERROR = "tool-error"  # compute-sanitizer itself could not do its job
OTHER = "other"

ERROR, WARNING, INFO = "error", "warning", "info"


@dataclass(frozen=True)
class Location:
    """Where an access happened: the function, the instruction's offset in it, and the source
    line when the code carried line info (for PTX given ptxls's .loc: the PTX file's line)."""

    function: str
    offset: int | None = None
    file: str = ""
    line: int | None = None

    def describe(self) -> str:
        where = f"{self.function}+{self.offset:#x}" if self.offset is not None else self.function
        return f"{where} ({self.file}:{self.line})" if self.line is not None else where


@dataclass
class SanitizerRecord:
    tool: str  # memcheck | racecheck | initcheck | synccheck ("" for the tool's own errors)
    kind: str
    severity: str  # error | warning | info
    message: str  # the head line, without the prefix
    locations: list[Location] = field(default_factory=list)  # a race has two; frames follow
    frames: list[Location] = field(default_factory=list)  # device frames (callers)
    access: str = ""  # read | write | atomic
    space: str = ""  # global | shared | local | ...
    size: int | None = None  # bytes per access
    address: int | None = None
    address_note: str = ""  # "is out of bounds and is 4 bytes after the nearest allocation ..."
    thread: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    threads: list[tuple[str, tuple[int, int, int]]] = field(default_factory=list)  # hazard sides
    accesses: list[str] = field(default_factory=list)  # race/hazard sides: "Write", "Read"
    hazard_type: str = ""  # RAW | WAR | WAW
    hazards: int | None = None  # "[508 hazards]"
    details: list[str] = field(default_factory=list)  # indented lines not read above
    raw: str = ""

    @property
    def kernel(self) -> str:
        return self.locations[0].function if self.locations else ""

    @property
    def lines(self) -> list[tuple[str, int]]:
        """(file, line) of each location that has one, in the order printed."""
        return [(loc.file, loc.line) for loc in self.locations if loc.line is not None]


@dataclass
class SanitizerReport:
    tool: str
    records: list[SanitizerRecord] = field(default_factory=list)
    error_summary: int | None = None  # ERROR SUMMARY: N errors
    racecheck_hazards: int | None = None  # RACECHECK SUMMARY: N hazards displayed
    racecheck_errors: int | None = None
    racecheck_warnings: int | None = None
    leak_summary: str = ""
    not_printed: int | None = None  # errors past --print-limit ("157 errors were not printed")
    raw: str = ""

    @property
    def findings(self) -> list[SanitizerRecord]:
        """Records about the checked code (not the tool's own failures)."""
        return [r for r in self.records if r.kind not in (TOOL_ERROR, OTHER)]

    @property
    def tool_errors(self) -> list[SanitizerRecord]:
        return [r for r in self.records if r.kind == TOOL_ERROR]

    @property
    def clean(self) -> bool:
        """Nothing found and the tool said so (a summary was printed, no tool error)."""
        said = self.error_summary is not None or self.racecheck_hazards is not None
        return said and not self.findings and not self.tool_errors and not self.error_summary


@dataclass
class RecordGroup:
    """Records of one kind at the same instruction(s): memcheck reports every faulting thread
    and racecheck every hazardous byte; a person wants one line per place, with the count."""

    first: SanitizerRecord
    count: int = 1
    threads: list[tuple[int, int, int]] = field(default_factory=list)  # the first few
    blocks: list[tuple[int, int, int]] = field(default_factory=list)
    addresses: list[int] = field(default_factory=list)  # every address seen, sorted

    @property
    def address_range(self) -> tuple[int, int] | None:
        return (self.addresses[0], self.addresses[-1]) if self.addresses else None


def parse_sanitizer_output(text: str, tool: str = "") -> SanitizerReport:
    """Parse compute-sanitizer's output (stdout or its --log-file). ``tool``: which tool ran
    (inferred from the records when not given)."""
    report = SanitizerReport(tool=tool, raw=text if isinstance(text, str) else "")
    try:
        _parse(report, report.raw)
    except Exception as e:  # a reader never fails on the text it is given
        report.records.append(
            SanitizerRecord(tool, OTHER, INFO, f"ptxls could not read this output: {e!r}")
        )
    if not report.tool:
        report.tool = next((r.tool for r in report.records if r.tool), "")
    return report


def group_records(records: list[SanitizerRecord], keep: int = 4) -> list[RecordGroup]:
    """One group per (kind, space, access, instruction offsets), in first-seen order."""
    groups: dict[tuple[object, ...], RecordGroup] = {}
    for r in records:
        key = (r.tool, r.kind, r.space, r.access, r.hazard_type if r.kind == HAZARD else "",
               tuple((loc.function, loc.offset, loc.line) for loc in r.locations),
               "" if r.locations else r.message)  # fmt: skip
        g = groups.get(key)
        if g is None:
            g = groups[key] = RecordGroup(r, 0)
        g.count += 1 if r.kind != RACE else 0
        if r.kind == RACE:
            g.count += r.hazards or 1
        for t in [r.thread, *(t for _, t in r.threads)]:
            if t is not None and t not in g.threads and len(g.threads) < keep:
                g.threads.append(t)
        if r.block is not None and r.block not in g.blocks and len(g.blocks) < keep:
            g.blocks.append(r.block)
        if r.address is not None and r.address not in g.addresses:
            g.addresses.append(r.address)
    for g in groups.values():
        g.addresses.sort()
    return list(groups.values())


# --- heads ---------------------------------------------------------------------------------

_INVALID = re.compile(
    r"^(Potential )?[Ii]nvalid __(\w+)__ (read|write|atomic)(?: access)? of size (\d+) bytes?"
)
_UNINIT = re.compile(r"^Uninitialized __(\w+)__ memory (read|access) of size (\d+) bytes?")
_UNUSED = re.compile(r"^Unused __(\w+)__ memory")
_LEVEL = r"(ERROR|Error|WARNING|Warning|INFO|Info)"
_RACE = re.compile(rf"^{_LEVEL}: Race reported between (Read|Write) access at (.+)$")
_HAZARD = re.compile(
    rf"^{_LEVEL}: (?:\(([^)]*)\) )?Potential (RAW|WAR|WAW) hazard detected at __(\w+)__ "
    r"(0x[0-9a-fA-F]+) in block \((\d+), ?(\d+), ?(\d+)\)"
)
_BARRIER = re.compile(r"^(Barrier error detected|Barrier called by|Syncwarp called by|Deadlock)")
_API = re.compile(
    r'^Program hit (.+?) \(error (\d+)\)(?: due to "(.*)")? on CUDA API call to (\S+?)\.?$'
)
_MALLOC = re.compile(r"^Malloc/Free error")
_LEAK = re.compile(r"^Leaked ")
_HARDWARE = re.compile(
    r"^(Warp|Lane|Device|Cluster) [A-Z][\w -]*(Address|Instruction|Overflow|Error|Exception|Trap|Param)"
)
_TOOL_ERROR = re.compile(
    r"^(Internal Sanitizer Error|Error|ERROR|Target application|Device not supported|"
    r"Unable to|Failed to|No CUDA)"
)
_ERROR_SUMMARY = re.compile(r"^ERROR SUMMARY: ([\d,]+) errors?\s*$")
_NOT_PRINTED = re.compile(r"^ERROR SUMMARY: ([\d,]+) errors? (?:were|was) not printed")
_RACE_SUMMARY = re.compile(
    r"^RACECHECK SUMMARY: ([\d,]+) hazards? displayed(?: \(([\d,]+) errors?, ([\d,]+) warnings?\))?"
)
_LEAK_SUMMARY = re.compile(r"^LEAK SUMMARY: (.*)")

# --- continuation lines --------------------------------------------------------------------

_AT = re.compile(r"^at (.+)$")
_BY_THREAD = re.compile(r"by thread \((\d+), ?(\d+), ?(\d+)\) in block \((\d+), ?(\d+), ?(\d+)\)")
_ADDRESS = re.compile(r"^(?:Address|Access to) (0x[0-9a-fA-F]+)\s*(.*)$")
_AND_IS = re.compile(r"^and is (.*)$")
_AND_ACCESS = re.compile(r"^and (Read|Write) access at (.+)$")
_THREAD_SIDE = re.compile(r"^(Read|Write) Thread \((\d+), ?(\d+), ?(\d+)\) at (.+)$")
_DEVICE_FRAME = re.compile(r"^Device Frame:\s*(.+)$")
_HAZARD_COUNT = re.compile(r"\s*\[([\d,]+) hazards?\]\s*$")
_HOST = re.compile(r"^(Saved host backtrace|Host Frame)")

_LOC = re.compile(
    r"^(?P<fn>.*?)(?:\+|:)0x(?P<off>[0-9a-fA-F]+)"
    r"(?: in (?P<file>.+?):(?P<line>\d+)(?::(?P<fn2>.+))?)?\s*$"
)
_LOC_PC = re.compile(
    r"^0x(?P<off>[0-9a-fA-F]+)(?: in (?P<file>.+?):(?P<line>\d+)(?::(?P<fn2>.+))?)?\s*$"
)


def parse_location(text: str) -> Location:
    """``k+0x1b0 in k.ptx:31``, ``k+0x1b0``, ``0x70 in x.cu:5:k(int*)`` (CUDA 11), or anything
    else as a function name."""
    text = text.strip()
    m = _LOC_PC.match(text) or _LOC.match(text)
    if not m:
        return Location(text)
    fn = (m.groupdict().get("fn") or "").strip() or (m.group("fn2") or "").strip()
    line = int(m.group("line")) if m.group("line") else None
    return Location(fn, int(m.group("off"), 16), (m.group("file") or "").strip(), line)


def _level(word: str) -> str:
    return {"error": ERROR, "warning": WARNING, "info": INFO}.get(word.lower(), ERROR)


def _int(text: str | None) -> int | None:
    return int(text.replace(",", "")) if text else None


def _head(line: str, tool: str) -> SanitizerRecord:
    rec = SanitizerRecord(tool, OTHER, INFO, line)
    if m := _INVALID.match(line):
        rec.tool, rec.kind, rec.severity = tool or "memcheck", INVALID_ACCESS, ERROR
        rec.space, rec.access, rec.size = m.group(2), m.group(3), int(m.group(4))
        if m.group(1):
            rec.severity = WARNING
    elif m := _UNINIT.match(line):
        rec.tool, rec.kind, rec.severity = tool or "initcheck", UNINITIALIZED, ERROR
        rec.space, rec.access, rec.size = m.group(1), "read", int(m.group(3))
    elif m := _UNUSED.match(line.strip()):
        rec.tool, rec.kind, rec.severity, rec.space = tool or "initcheck", UNUSED, INFO, m.group(1)
    elif m := _RACE.match(line):
        rec.tool, rec.kind, rec.severity = "racecheck", RACE, _level(m.group(1))
        rec.space = "shared"
        _add_race_side(rec, m.group(2), m.group(3))
    elif m := _HAZARD.match(line):
        rec.tool, rec.kind, rec.severity = "racecheck", HAZARD, _level(m.group(1))
        rec.hazard_type, rec.space = m.group(3), m.group(4)
        rec.address = int(m.group(5), 16)
        rec.block = (int(m.group(6)), int(m.group(7)), int(m.group(8)))
        if m.group(2):
            rec.details.append(m.group(2))
    elif _BARRIER.match(line):
        rec.tool, rec.kind, rec.severity = tool or "synccheck", BARRIER, ERROR
        if " at " in line and (at := line.rsplit(" at ", 1)[1]) and "+0x" in at:
            rec.locations.append(parse_location(at))
    elif m := _API.match(line):
        rec.kind, rec.severity = API_ERROR, ERROR
        rec.details.append(f"{m.group(1)} from {m.group(4)}")
    elif _MALLOC.match(line):
        rec.tool, rec.kind, rec.severity = tool or "memcheck", MALLOC, ERROR
    elif _LEAK.match(line):
        rec.tool, rec.kind, rec.severity = tool or "memcheck", LEAK, WARNING
    elif _HARDWARE.match(line):
        rec.tool, rec.kind, rec.severity = tool or "memcheck", HARDWARE, ERROR
    elif _TOOL_ERROR.match(line):
        rec.tool, rec.kind, rec.severity = "", TOOL_ERROR, ERROR
    elif re.match(r"^(Warning|WARNING):", line):
        rec.severity = WARNING
    return rec


def _add_race_side(rec: SanitizerRecord, access: str, where: str) -> None:
    if m := _HAZARD_COUNT.search(where):
        rec.hazards = _int(m.group(1))
        where = where[: m.start()]
    rec.accesses.append(access)
    rec.locations.append(parse_location(where))


def _continue(rec: SanitizerRecord, line: str) -> None:
    if m := _AND_ACCESS.match(line):
        _add_race_side(rec, m.group(1), m.group(2))
    elif m := _THREAD_SIDE.match(line):
        thread = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
        rec.threads.append((m.group(1), thread))
        rec.accesses.append(m.group(1))
        rec.locations.append(parse_location(m.group(5)))
    elif m := _DEVICE_FRAME.match(line):
        rec.frames.append(parse_location(m.group(1)))
    elif (m := _AT.match(line)) and not rec.locations:
        rec.locations.append(parse_location(m.group(1)))
    elif m := _BY_THREAD.search(line):
        rec.thread = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        rec.block = (int(m.group(4)), int(m.group(5)), int(m.group(6)))
    elif m := _ADDRESS.match(line):
        rec.address, rec.address_note = int(m.group(1), 16), m.group(2).strip()
    elif m := _AND_IS.match(line):
        rec.address_note = f"{rec.address_note} and is {m.group(1)}".strip()
    elif not _HOST.match(line):
        rec.details.append(line)


def _summary(report: SanitizerReport, line: str) -> bool:
    if m := _ERROR_SUMMARY.match(line):
        report.error_summary = _int(m.group(1))
    elif m := _NOT_PRINTED.match(line):
        report.not_printed = _int(m.group(1))
    elif m := _RACE_SUMMARY.match(line):
        report.racecheck_hazards = _int(m.group(1))
        report.racecheck_errors, report.racecheck_warnings = _int(m.group(2)), _int(m.group(3))
        report.tool = report.tool or "racecheck"
    elif m := _LEAK_SUMMARY.match(line):
        report.leak_summary = m.group(1)
    else:
        return False
    return True


def _parse(report: SanitizerReport, text: str) -> None:
    tool = report.tool  # the caller's: a summary line must not relabel later records
    current: SanitizerRecord | None = None
    raw: list[str] = []

    def close() -> None:
        nonlocal current, raw
        if current is not None:
            current.raw = "\n".join(raw)
            report.records.append(current)
        current, raw = None, []

    for full in text.splitlines():
        m = _PREFIX.match(full)
        if not m:
            continue  # the checked program's own output
        body = full[m.end() :].rstrip()
        stripped = body.strip()
        indent = len(body) - len(body.lstrip())
        if not stripped or stripped == "COMPUTE-SANITIZER" or _summary(report, stripped):
            close()
        elif indent >= 3 and current is not None:
            raw.append(full.rstrip())
            _continue(current, stripped)
        else:
            close()
            current, raw = _head(stripped, tool), [full.rstrip()]
    close()
