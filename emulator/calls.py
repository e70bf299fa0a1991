""".func calls, by inlining: each kernel's body gets a copy of every function it calls (non-
recursively), so the SIMT engine only ever runs one flat instruction list.

A call site ``call (retval0), f, (param0, param1);`` is replaced by f's body with
- f's registers renamed into the kernel's register file (``f::%r1``; one set per callee, which
  is enough without recursion: a callee's registers are dead once it returns),
- f's formal parameters renamed to the caller's argument variables (``.param`` variables the
  caller declared; they live in per-thread local memory) and its return parameter to the
  caller's return variable,
- f's ``ret`` turned into a branch past the inlined body, branch targets shifted.
Recursion, indirect calls (a register as the callee) and calls of functions without a body
(``.extern .func``, ``vprintf``) are refused."""

from __future__ import annotations

from dataclasses import replace

from .decode import Addr, ArgList, Function, Instr, Pair, Reg, RegInfo, Sym, Var, Vec
from .errors import Refused


def _map_op(op, regs: dict[int, int], syms: dict[str, str]):
    t = type(op)
    if t is Reg:
        return Reg(regs[op.index], op.name, op.neg)
    if t is Sym:
        return Sym(syms.get(op.name, op.name), op.offset)
    if t is Addr:
        return Addr(_map_op(op.base, regs, syms) if op.base is not None else None, op.offset)
    if t is Vec:
        return Vec(tuple(_map_op(x, regs, syms) for x in op.items))
    if t is Pair:
        return Pair(_map_op(op.first, regs, syms), _map_op(op.second, regs, syms))
    if t is ArgList:
        return ArgList(tuple(_map_op(x, regs, syms) for x in op.items))
    return op


def _call_parts(ins: Instr) -> tuple[list[str], str, list[str]]:
    """(return variables, callee name, argument variables) of a call instruction."""
    ops = list(ins.operands)
    rets: list[str] = []
    if ops and type(ops[0]) is ArgList:
        rets = [x.name for x in ops.pop(0).items if type(x) is Sym]
    target = ops.pop(0) if ops else None
    if type(target) is not Sym:
        raise Refused(ins.text, ins.line, "an indirect call (through a register) is not emulated")
    callee = target.name
    params = ops[0] if ops else None
    args = [x.name for x in params.items if type(x) is Sym] if type(params) is ArgList else []
    return rets, callee, args


def inline_calls(kernel: Function, functions: dict[str, Function]) -> None:
    """Replace every call in the kernel by the callee's body (in place)."""
    if not any(i.op == "call" for i in kernel.instrs):
        return
    cache: dict[str, tuple[list[Instr], list[Var]]] = {}
    instrs, extra_vars, _own = _expand(kernel, functions, kernel, cache, ())
    for k, ins in enumerate(instrs):
        ins.index = k
    kernel.instrs = instrs
    kernel.vars.extend(extra_vars)


def _expand(func, functions, kernel, cache, stack):
    """func's body with its calls spliced in; targets relative to the list's start."""
    out: list[Instr] = []
    own: list[bool] = []  # which entries of out are func's own (not spliced from a callee)
    new_at: dict[int, int] = {}
    pending: list[tuple[int, int]] = []  # (position in out, original target) of a branch
    extra_vars: list[Var] = []
    for ins in func.instrs:
        new_at[ins.index] = len(out)
        if ins.op != "call":
            copy = replace(ins)
            out.append(copy)
            own.append(True)
            if copy.target is not None:
                pending.append((len(out) - 1, copy.target))
            continue
        rets, name, args = _call_parts(ins)
        callee = functions.get(name)
        if callee is None:
            raise Refused(ins.text, ins.line, f"call of {name}, which has no body here")
        if name in stack or callee is func:
            raise Refused(ins.text, ins.line, f"recursive call of {name} is not emulated")
        body, body_vars = _callee(callee, functions, kernel, cache, stack + (func.name,))
        syms = {p.name: a for p, a in zip(callee.params, args, strict=False)}
        syms.update({p.name: r for p, r in zip(callee.return_params, rets, strict=False)})
        syms.update({v.name: f"{name}::{v.name}" for v in callee.vars})
        base, end = len(out), len(out) + len(body)
        for b in body:
            copy = replace(b, operands=tuple(_map_op(o, _IDENT, syms) for o in b.operands))
            if b.op == "ret":  # return: to the instruction after the inlined body
                copy = replace(copy, op="bra", mods=(), operands=(Sym("__return"),), target=end)
            elif b.target is not None:
                copy.target = b.target + base
            out.append(copy)
            own.append(False)
        if ins.guard is not None:
            raise Refused(ins.text, ins.line, "a guarded call is not emulated")
        extra_vars.extend(body_vars)
    for pos, orig_target in pending:
        out[pos].target = new_at.get(orig_target, len(out))
    return out, extra_vars, own


class _Identity(dict):
    def __missing__(self, key):
        return key


_IDENT = _Identity()


def _callee(callee, functions, kernel, cache, stack):
    """The callee's expanded body with its registers moved into the kernel's register file."""
    if callee.name in cache:
        return cache[callee.name]
    body, nested_vars, own = _expand(callee, functions, kernel, cache, stack)
    regs: dict[int, int] = {}
    for i, r in enumerate(callee.regs):
        name = f"{callee.name}::{r.name}"
        if name not in kernel.reg_index:
            kernel.reg_index[name] = len(kernel.regs)
            kernel.regs.append(RegInfo(name, r.type, r.width))
        regs[i] = kernel.reg_index[name]
    renamed = []
    for b, mine in zip(body, own, strict=True):
        if not mine:  # spliced from a deeper callee: already in the kernel's registers
            renamed.append(b)
            continue
        guard = Reg(regs[b.guard.index], b.guard.name, b.guard.neg) if b.guard is not None else None
        renamed.append(
            replace(b, operands=tuple(_map_op(o, regs, {}) for o in b.operands), guard=guard)
        )
    own_vars = [replace(v, name=f"{callee.name}::{v.name}") for v in callee.vars]
    cache[callee.name] = (renamed, own_vars + nested_vars)
    return cache[callee.name]
