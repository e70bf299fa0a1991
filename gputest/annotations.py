"""``// @gputest`` annotations: the comment block right above a kernel overrides or supplies its
test spec. One or more items per line, separated by ';' (``ref:`` takes the rest of its line):

    // @gputest a: in f32[n]; b: in f32[n]; c: out f32[n]; n: size
    // @gputest alpha: f32 = 2.5
    // @gputest launch: grid=ceil(n/256) block=256 shared=0
    // @gputest sizes: 0 1 255 257 3007 1<<24
    // @gputest ref: c = alpha * a + b
    // @gputest tol: 1e-5; seed: 7

Every problem points at the item that caused it (0-based line and columns).
"""

from __future__ import annotations

import re

from . import exprs
from .dtypes import DTYPES
from .spec import LaunchSpec, ParamSpec, SpecProblem, TestSpec

TAG = "@gputest"
_SPECIAL = ("launch", "sizes", "ref", "tol", "seed", "runs")


def comment_block_above(lines: list[str], line: int) -> list[int]:
    """Line numbers of the contiguous '//' comment lines directly above ``line``."""
    found = []
    i = line - 1
    while i >= 0 and lines[i].lstrip().startswith("//"):
        found.append(i)
        i -= 1
    return sorted(found)


def items_above(lines: list[str], line: int) -> list[tuple[str, int, int]]:
    """(item text, line, column) for each @gputest item in the comment block above ``line``."""
    items = []
    for i in comment_block_above(lines, line):
        text = lines[i]
        at = text.find(TAG)
        if at < 0:
            continue
        start = at + len(TAG)
        body = text[start:]
        if body.lstrip().startswith("ref:"):
            col = start + len(body) - len(body.lstrip())
            items.append((body.strip(), i, col))
            continue
        pos = start
        for part in body.split(";"):
            if part.strip():
                col = pos + len(part) - len(part.lstrip())
                items.append((part.strip(), i, col))
            pos += len(part) + 1
    return items


_POINTER = re.compile(r"^(in|out|inout)\s+(\w+)\s*(?:\[(.+)\])?$")
_SIZE = re.compile(r"^size(?:\s+(\w+))?$")
_SCALAR = re.compile(r"^(\w+)?\s*=\s*(.+)$")


def apply(
    spec: TestSpec | None,
    lines: list[str],
    line: int,
    kernel: str,
    *,
    where: str = "annotation",
) -> tuple[TestSpec | None, list[SpecProblem]]:
    """Apply the annotations above ``line`` to ``spec`` (or build one from nothing when ``spec``
    is None: then the annotation lists the parameters in order). Returns the new spec and the
    problems; on a problem the item is skipped, the rest still applies."""
    items = items_above(lines, line)
    problems: list[SpecProblem] = []
    if spec is None:
        if not items:
            return None, []
        spec = TestSpec(kernel=kernel, params=[], origin=[])
        building = True
    else:
        building = False
    touched = False

    def bad(msg: str, text: str, ln: int, col: int) -> None:
        problems.append(SpecProblem(f"@gputest: {msg}", ln, col, col + len(text)))

    # Parameters first, so launch/ref expressions can name scalars declared later on the line.
    ordered = sorted(items, key=lambda it: it[0].partition(":")[0].strip() in _SPECIAL)
    for text, ln, col in ordered:
        key, sep, value = text.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or not re.fullmatch(r"\w+", key):
            bad(
                f"'{text}' is not 'NAME: ...' (e.g. 'c: out f32[n]', 'sizes: 0 1 257')",
                text,
                ln,
                col,
            )
            continue
        try:
            if key in _SPECIAL:
                _apply_special(spec, key, value)
            else:
                _apply_param(spec, key, value, building)
            touched = True
        except (ValueError, KeyError) as e:
            bad(str(e.args[0]) if e.args else str(e), text, ln, col)
    if touched:
        spec.origin.append(f"{where} (line {items[0][1] + 1})")
    return spec, problems


def _names(spec: TestSpec) -> set[str]:
    return {p.name for p in spec.params if not p.is_pointer} | {"n"}


def _apply_special(spec: TestSpec, key: str, value: str) -> None:
    if key == "sizes":
        from .spec_check import MAX_SIZES

        tokens = [tok for tok in re.split(r"[\s,]+", value.strip()) if tok]
        if len(tokens) > MAX_SIZES:
            # Refused before 10**6 expressions are parsed (seconds of a worker thread).
            raise ValueError(f"'sizes:' lists {len(tokens)} sizes (at most {MAX_SIZES})")
        sizes = []
        for tok in tokens:
            if tok:
                n = exprs.evaluate_int(tok, {})
                if n < 0:
                    raise ValueError(f"size {tok} is negative")
                sizes.append(n)
        if not sizes:
            raise ValueError("'sizes:' lists no sizes")
        spec.sizes = sizes
    elif key == "tol":
        spec.tol = float(exprs.evaluate(value, {}))
    elif key == "seed":
        spec.seed = exprs.evaluate_int(value, {})
    elif key == "runs":
        spec.timing_runs = max(1, exprs.evaluate_int(value, {}))
    elif key == "ref":
        if "=" not in value:
            raise ValueError(
                f"'ref: {value}' needs an assignment to an output, e.g. 'ref: c = a + b'"
            )
        spec.numpy_ref = value if spec.numpy_ref is None else spec.numpy_ref + "; " + value
    elif key == "launch":
        _apply_launch(spec.launch, value, _names(spec))


def _apply_launch(launch: LaunchSpec, value: str, names: set[str]) -> None:
    parts = re.split(r"\b(grid|block|shared)\s*=", value)
    if parts[0].strip() or len(parts) < 3:
        raise ValueError(
            f"'launch: {value}' should read 'launch: grid=EXPR block=EXPR [shared=EXPR]'"
        )
    for k, expr in zip(parts[1::2], parts[2::2], strict=True):
        expr = expr.strip()
        dims = exprs.split_dims(expr)
        if not 1 <= len(dims) <= (1 if k == "shared" else 3):
            raise ValueError(
                f"'{k}={expr}' should be one expression"
                + ("" if k == "shared" else " or up to three, 'x, y, z'")
            )
        for e in dims:
            exprs.check(e, names)
        setattr(launch, k, expr)


def _apply_param(spec: TestSpec, name: str, value: str, building: bool) -> None:
    existing = spec.param(name)
    if existing is None and not building:
        have = ", ".join(p.name for p in spec.params)
        raise ValueError(f"'{name}' is not a parameter of {spec.kernel} (its parameters: {have})")
    if m := _POINTER.match(value):
        role, dt, length = m.group(1), m.group(2), (m.group(3) or "n").strip()
        _known_type(dt)
        exprs.check(length, _names(spec) | {name})
        new = ParamSpec(name, role, dt, length)
    elif m := _SIZE.match(value):
        dt = m.group(1) or (existing.dtype if existing and not existing.is_pointer else "i32")
        _known_type(dt)
        new = ParamSpec(name, "size", dt)
    elif m := _SCALAR.match(value):
        dt = m.group(1) or (existing.dtype if existing else None)
        if dt is None:
            raise ValueError(f"'{name}: {value}' needs a type, e.g. '{name}: f32 = 2.5'")
        _known_type(dt)
        exprs.check(m.group(2), _names(spec))
        new = ParamSpec(name, "scalar", dt, value=m.group(2).strip())
    else:
        raise ValueError(
            f"cannot read '{name}: {value}': write 'in|out|inout TYPE[LEN]', 'size', or 'TYPE = VALUE'"
        )
    if existing is None:
        spec.params.append(new)
    else:
        spec.params[spec.params.index(existing)] = new


def _known_type(dt: str) -> None:
    if dt not in DTYPES:
        raise ValueError(f"unknown type '{dt}' (known: {', '.join(DTYPES)})")


SIDECAR_SUFFIX = ".gputest"


def sidecar_lines(text: str, kernel: str) -> list[tuple[int, str]]:
    """(line number, item text) of the ``[kernel]`` section of a sidecar file: the same items as
    the annotation, one or more per line, without the ``// @gputest`` prefix; '#' comments."""
    out, current = [], None
    for i, raw in enumerate(text.splitlines()):
        line = raw.split("#", 1)[0].rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            current = stripped[1:-1].strip()
            continue
        if current == kernel:
            out.append((i, line))
    return out


def apply_sidecar(
    spec: TestSpec | None, text: str, kernel: str, path: str
) -> tuple[TestSpec | None, list[SpecProblem]]:
    """Apply a sidecar's ``[kernel]`` section as if it were an annotation; problems point at the
    sidecar's own lines and columns."""
    found = sidecar_lines(text, kernel)
    if not found:
        return spec, []
    prefix = f"// {TAG} "
    synthetic = [prefix + raw.lstrip() for _, raw in found]
    spec, problems = apply(spec, synthetic + [""], len(synthetic), kernel, where=f"sidecar {path}")
    if spec is not None and spec.origin and spec.origin[-1].startswith(f"sidecar {path} (line "):
        spec.origin[-1] = f"sidecar {path} (line {found[0][0] + 1})"
    mapped = []
    for p in problems:
        src_line, raw = found[p.line]
        shift = (len(raw) - len(raw.lstrip())) - len(prefix)
        mapped.append(SpecProblem(p.message, src_line, p.col + shift, p.end_col + shift, file=path))
    return spec, mapped
