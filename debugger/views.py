"""What the debugger shows of the emulator's state: register values by their PTX type, special
registers, parameters, shared memory and global buffers as typed arrays, and names looked up
for expressions (over one thread, or over a whole group of threads at once).

Register files are numpy arrays of raw bits over every thread of the wave (a 0-d array while the
value is the same for all); nothing here writes to them.
"""

from __future__ import annotations

import numpy as np

from . import expressions as X

SPECIALS = (
    "%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z",
    "%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z",
    "%laneid", "%warpid",
)  # fmt: skip
_PTX_ELEM = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16, "u8": np.uint8, "s8": np.int8,
    "u16": np.uint16, "s16": np.int16, "u32": np.uint32, "s32": np.int32, "u64": np.uint64,
    "s64": np.int64, "b8": np.uint8, "b16": np.uint16, "b32": np.uint32, "b64": np.uint64,
}  # fmt: skip


def special_names() -> tuple[str, ...]:
    return SPECIALS


# ---- raw bits and their meaning


def reg_bits(session, name: str, idx: np.ndarray):
    """(bits over idx, written mask over idx) of a register; bits None if never written."""
    wave = session.ex.wave
    i = session.func.reg_index[name]
    arr = wave.regs[i]
    w = wave.written[i]
    w = np.asarray(w if w is not None else False)
    written = np.broadcast_to(w, idx.shape).copy() if w.ndim == 0 else w[idx].astype(bool)
    if arr is None:
        return None, np.zeros(idx.shape, bool)
    return (np.broadcast_to(arr, idx.shape) if arr.ndim == 0 else arr[idx]), written


def typed(bits: np.ndarray, ptx_type: str):
    """Values of raw register bits as the register's type, for expressions: floats as floats,
    .s and .b as signed, .u as unsigned, predicates as bool."""
    t = ptx_type.lstrip(".")
    if t == "pred" or bits.dtype == np.bool_:
        return bits.astype(bool)
    size = bits.dtype.itemsize
    if t in ("f32", "f64", "f16"):
        return bits.view({"f32": np.float32, "f64": np.float64, "f16": np.float16}[t])
    if t.startswith("u"):
        return bits
    return bits.view({1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[size])


def show(bits, ptx_type: str) -> str:
    """One value as a kernel engineer reads it: .f32 as a float, .b32 as hex and signed,
    predicates as true/false, .f16x2 as its two halves."""
    t = ptx_type.lstrip(".")
    b = np.asarray(bits)
    if t == "pred" or b.dtype == np.bool_:
        return "true" if bool(b) else "false"
    size = b.dtype.itemsize
    u = int(b)
    if t in ("f16x2", "bf16x2"):
        halves = [u & 0xFFFF, u >> 16]
        if t == "f16x2":
            lo, hi = (float(np.uint16(h).view(np.float16)) for h in halves)
        else:
            lo, hi = (float(np.uint32(h << 16).view(np.float32)) for h in halves)
        return f"({_g(lo)}, {_g(hi)})  0x{u:08x}"
    if t in ("f32", "f64", "f16"):
        v = float(b.view({"f32": np.float32, "f64": np.float64, "f16": np.float16}[t]))
        return f"{_g(v, wide=t == 'f64')}  0x{u:0{size * 2}x}"
    signed = int(b.view({1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[size]))
    if t.startswith("u"):
        return str(u)
    if t.startswith("s"):
        return str(signed)
    return f"0x{u:0{size * 2}x} ({signed})"


def _g(v, wide: bool = False) -> str:
    """The shortest text that reads back as the same value (of float32 unless ``wide``)."""
    return repr(float(v)) if wide else str(np.float32(v))


# ---- names in expressions


def group_lookup(session, idx: np.ndarray):
    """Functions giving a name's value over the threads ``idx`` of the wave: registers as their
    type, special registers, the case's scalars; and buffer elements."""
    wave = session.ex.wave
    regs = {r.name: r for r in session.func.regs}

    def lookup(name):
        if name in regs:
            bits, written = reg_bits(session, name, idx)
            if bits is None or not written.all():
                raise X.ExpressionError(f"{name} is not written yet")
            return typed(np.asarray(bits), regs[name].type)
        if name in SPECIALS:
            return np.broadcast_to(np.asarray(wave.special(name, idx)), idx.shape).astype(np.int64)
        if name in session.case.env:
            return session.case.env[name]
        raise X.ExpressionError(f"unknown name '{name}'")

    def index(name, i):
        return read_element(session, name, i)

    return lookup, index


def read_element(session, name: str, i):
    buf = session.case.buffer(name)
    if buf is None:
        raise X.ExpressionError(f"'{name}' is not a buffer")
    i = np.asarray(i).astype(np.int64)
    if (i < 0).any() or (i >= buf.length).any():
        raise X.ExpressionError(f"{name} has {buf.length} elements")
    data = buffer_view(session, buf)
    return data[i]


def buffer_view(session, buf) -> np.ndarray:
    nbytes = buf.length * buf.storage.itemsize
    raw = session.case.memory.view(buf.address, nbytes) if nbytes else np.zeros(0, np.uint8)
    data = np.asarray(raw).view(buf.storage)
    if buf.dtype == "bf16":
        return (data.astype(np.uint32) << 16).view(np.float32)
    return data


# ---- scopes


def registers(session, w: int) -> list[dict]:
    out = []
    idx = np.array([w])
    for r in session.func.regs:
        bits, written = reg_bits(session, r.name, idx)
        value = "(not written)" if bits is None or not written[0] else show(bits[0], r.type)
        out.append(_var(r.name, value, r.type.lstrip(".")))
    return out


def specials(session, w: int) -> list[dict]:
    wave = session.ex.wave
    idx = np.array([w])
    return [_var(name, str(int(np.broadcast_to(np.asarray(wave.special(name, idx)), (1,))[0])),
                 "u32") for name in SPECIALS]  # fmt: skip


def params(session) -> list[dict]:
    raw = session.ex.spec.param_bytes
    by_ptr = {b.address: b.name for b in session.case.buffers}
    out = []
    for p in session.func.params:
        chunk = np.frombuffer(raw[p.offset : p.offset + p.size], np.uint8)
        t = p.type.lstrip(".")
        if p.size in (1, 2, 4, 8):
            bits = chunk.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[p.size])[0]
            value = show(bits, t)
            if p.size == 8 and int(bits) in by_ptr:
                value = f"0x{int(bits):x} → {by_ptr[int(bits)]}"
        else:
            value = chunk.tobytes().hex()
        out.append(_var(p.name, value, t))
    return out


def array_children(values: np.ndarray, start: int, count: int, label=None) -> list[dict]:
    end = min(values.size, start + count)
    return [_var(f"[{k}]" if label is None else label(k), _elem(values[k]), str(values.dtype))
            for k in range(start, end)]  # fmt: skip


def _elem(v) -> str:
    if isinstance(v, np.floating):
        return _g(v, wide=v.dtype == np.float64)
    return str(v.item() if hasattr(v, "item") else v)


def shared_arrays(session, w: int) -> list[tuple[str, str, np.ndarray]]:
    """(name, element type, values) of each shared variable of the thread's block."""
    wave = session.ex.wave
    slot = int(wave.slot[w])
    size = wave.shared_size
    mem = wave.shared[slot * size : (slot + 1) * size]
    out = []
    types = {v.name: v.elem_type.lstrip(".") for v in session.func.vars}
    for name, off, nbytes in session.ex.spec.shared_vars:
        et = types.get(name, "b8")
        dt = np.dtype(_PTX_ELEM.get(et, np.uint8))
        end = off + nbytes if nbytes else size
        n = (end - off) // dt.itemsize
        out.append((name, et, mem[off : off + n * dt.itemsize].view(dt)))
    return out


def warp_lanes(session, w: int):
    """The followed thread's warp: (lane wave indices, active mask, exited mask, its PC)."""
    wave = session.ex.wave
    lane = int(wave.lane[w])
    first = w - lane
    block_end = (int(wave.slot[w]) + 1) * wave.block_threads
    lanes = np.arange(first, min(first + 32, block_end))
    pc = session.pc_of(w)
    active = exited = 0
    for k, t in enumerate(lanes):
        if wave.exited[t]:
            exited |= 1 << k
        elif session.pc_of(int(t)) == pc:
            active |= 1 << k
    return lanes, active, exited


def _var(name: str, value: str, type_: str = "", ref: int = 0, indexed: int | None = None):
    v = {"name": name, "value": value, "type": type_, "variablesReference": ref}
    if indexed is not None:
        v["indexedVariables"] = indexed
    return v
