"""PTX instruction knowledge: what an opcode, modifier, special register or directive means and
which ``.version``/``.target`` it needs. Plain data from ``data/ptx_isa.json`` (curated from the
PTX ISA reference; see its "about" field), for hover, completion and the availability lint.

Tokens are looked up as written in the source: ``ld.global.v4.f32`` is the opcode ``ld`` with
the modifiers ``.global``, ``.v4``, ``.f32``; ``cp.async.bulk.tensor.2d.shared::cluster…`` is the
longest opcode name that prefixes it (``cp.async.bulk.tensor``) and the rest.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from importlib import resources

Version = tuple[int, int]


@dataclass(frozen=True)
class Variant:
    when: tuple[str, ...]  # all of these modifiers present → the stricter requirement applies
    isa: Version
    target: str | None
    example: str | None = None  # a line ptxas has been shown to check (tests/test_isa.py)


@dataclass(frozen=True)
class Opcode:
    name: str
    summary: str
    syntax: str
    isa: Version
    target: str | None  # None: every target
    modifiers: dict[str, str] = field(default_factory=dict)
    variants: tuple[Variant, ...] = ()
    arch_specific: tuple[str, ...] = ()  # only these targets accept it (sm_90a …)
    example: str | None = None
    ptxas_isa: Version | None = None  # where ptxas accepts an older .version than documented


@dataclass(frozen=True)
class Requirement:
    isa: Version
    target: str | None  # "sm_80"; None: any target
    arch_specific: tuple[str, ...] = ()
    because: str = ""  # the opcode or modifiers that set it, for messages
    accepted_isa: Version | None = None  # the lowest .version ptxas really accepts (≤ isa)

    @property
    def lint_isa(self) -> Version:
        return self.accepted_isa or self.isa


def parse_version(text: str) -> Version:
    major, minor = text.split(".")
    return int(major), int(minor)


def sm_number(target: str | None) -> int | None:
    """sm_90a → 90, sm_100f → 100; None for anything else."""
    if not target:
        return None
    m = re.fullmatch(r"sm_(\d+)[af]?", target.strip())
    return int(m.group(1)) if m else None


@functools.lru_cache(maxsize=1)
def _data() -> dict:
    raw = resources.files("ptxls.diagnostics").joinpath("data/ptx_isa.json").read_text("utf-8")
    return json.loads(raw)


@functools.lru_cache(maxsize=1)
def _opcodes() -> dict[str, Opcode]:
    out = {}
    for name, o in _data()["opcodes"].items():
        out[name] = Opcode(
            name=name,
            summary=o["summary"],
            syntax=o["syntax"],
            isa=parse_version(o["isa"]),
            target=o["target"],
            modifiers=o.get("modifiers", {}),
            variants=tuple(
                Variant(tuple(v["when"]), parse_version(v["isa"]), v["target"], v.get("example"))
                for v in o.get("variants", [])
            ),
            arch_specific=tuple(o.get("arch_specific", ())),
            example=o.get("example"),
            ptxas_isa=parse_version(o["ptxas_isa"]) if o.get("ptxas_isa") else None,
        )
    return out


def opcodes() -> dict[str, Opcode]:
    return dict(_opcodes())


def opcode_names() -> list[str]:
    return sorted(_opcodes())


def modifier_names() -> list[str]:
    names = set(_data()["modifiers"])
    for o in _opcodes().values():
        names.update(o.modifiers)
    return sorted(names)


def special_register_names() -> list[str]:
    return sorted(_data()["special_registers"])


def directive_names() -> list[str]:
    return sorted(_data()["directives"])


def split_opcode(token: str) -> tuple[Opcode, list[str]] | None:
    """(opcode, its modifiers with leading dots) for a dotted instruction token, or None."""
    token = token.strip().rstrip(";,")
    parts = token.split(".")
    table = _opcodes()
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        if name in table:
            return table[name], ["." + p for p in parts[n:] if p]
    return None


def _version_text(v: Version) -> str:
    return f"{v[0]}.{v[1]}"


def _later(a: str | None, b: str | None) -> str | None:
    """The stricter of two minimum targets."""
    if a is None:
        return b
    if b is None:
        return a
    return a if (sm_number(a) or 0) >= (sm_number(b) or 0) else b


def requirement(token: str) -> Requirement | None:
    """What the whole instruction token needs: its opcode's minimum, raised by every variant
    whose modifiers it carries. None for something that is not a known opcode."""
    found = split_opcode(token)
    if found is None:
        return None
    op, mods = found
    isa, target, why = op.isa, op.target, [op.name]
    present = set(mods)
    for v in op.variants:
        if not all(w in present for w in v.when):
            continue
        raised = v.isa > isa or _later(target, v.target) != target
        isa, target = max(isa, v.isa), _later(target, v.target)
        if raised:
            why.append("".join(v.when))
    # ptxas is more lenient than the document for a few opcodes; that only counts while no
    # variant has raised the version.
    accepted = min(isa, op.ptxas_isa) if op.ptxas_isa and isa == op.isa else None
    return Requirement(isa, target, op.arch_specific, "".join(why), accepted)


def requirements(opcode_token: str) -> tuple[Version, str | None] | None:
    """(minimum PTX ISA version, minimum target or None for any) of an instruction token."""
    req = requirement(opcode_token)
    return None if req is None else (req.isa, req.target)


def _requirement_line(isa: Version, target: str | None, arch_specific=()) -> str:
    if arch_specific:
        where = "only " + ", ".join(arch_specific)
    elif target:
        where = f"{target}+"
    else:
        where = "all targets"
    return f"PTX ISA ≥ {_version_text(isa)}, {where}"


def modifier_meaning(modifier: str, op: Opcode | None = None) -> str | None:
    """The meaning of one modifier (with its leading dot), in the context of ``op`` if given."""
    if op is not None and modifier in op.modifiers:
        return op.modifiers[modifier]
    general = _data()["modifiers"].get(modifier)
    if general:
        return general
    if m := re.fullmatch(r"\.m(\d+)n(\d+)k(\d+)", modifier):
        return f"matrix shape M={m.group(1)}, N={m.group(2)}, K={m.group(3)}"
    if m := re.fullmatch(r"\.x(\d+)", modifier):
        return f"{m.group(1)} matrices"
    if m := re.fullmatch(r"\.L2::(\d+)B", modifier):
        return f"prefetch {m.group(1)} bytes into L2"
    return None


def _hover_opcode(op: Opcode, mods: list[str]) -> str:
    req = requirement(op.name + "".join(mods))
    lines = [f"**{op.name}** — {op.summary}", "", f"`{op.syntax}`", ""]
    for m in dict.fromkeys(mods):  # .bf16.bf16 (A and B types) explained once
        meaning = modifier_meaning(m, op)
        lines.append(f"- `{m}`: {meaning}" if meaning else f"- `{m}`")
    if mods:
        lines.append("")
    assert req is not None
    lines.append(_requirement_line(req.isa, req.target, req.arch_specific))
    if req.because != op.name:
        lines[-1] += f" (for `{req.because}`)"
    return "\n".join(lines)


def _hover_special(token: str) -> str | None:
    regs = _data()["special_registers"]
    name, _, comp = token.partition(".")
    entry = regs.get(name)
    if entry is None:
        # Numbered families: %envreg3 → %envreg, %pm5 → %pm0, %pm2_64 → %pm0.
        base = re.sub(r"\d+(_64)?$", "", name)
        entry = regs.get(base) or regs.get(base + "0")
    if entry is None:
        return None
    extra = f" (component `.{comp}`)" if comp else ""
    req = _requirement_line(parse_version(entry["isa"]), entry["target"])
    return f"**{token}**{extra} — {entry['summary']}\n\n{req}"


def _hover_directive(token: str) -> str | None:
    entry = _data()["directives"].get(token)
    if entry is None:
        return None
    req = _requirement_line(parse_version(entry["isa"]), entry["target"])
    return f"**{token}** — {entry['summary']}\n\n`{entry['syntax']}`\n\n{req}"


def hover_markdown(token: str) -> str | None:
    """Markdown for a token under the cursor: an instruction (``ld.global.v4.f32``), a special
    register (``%tid.x``), a directive (``.maxntid``) or a lone modifier (``.cg``); else None."""
    token = token.strip()
    if not token:
        return None
    if token.startswith("%"):
        return _hover_special(token)
    if token.startswith("."):
        direct = _hover_directive(token)
        if direct:
            return direct
        meaning = modifier_meaning(token)
        return f"`{token}` — {meaning}" if meaning else None
    found = split_opcode(token)
    if found is None:
        return None
    return _hover_opcode(*found)
