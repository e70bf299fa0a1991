"""The control-flow graph of a PTX body, as ``ptx_dataflow.py`` reads it: each instruction with
the registers it writes and reads and where it may go next (``Instr``), basic blocks split at
labels, branches, ``ret`` and ``exit`` (``basic_blocks``), and the graph questions the dataflow
check asks — is there a loop, which blocks are reachable, which registers some path writes
before each block (``may_reach``: linear over strongly connected components, however loops
nest).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Instr:
    line: int
    col: int
    opcode: str
    base: str
    guarded: bool
    writes: list[str]
    reads: list[tuple[str, int]]  # register, offset in the text
    addresses: list[str]  # text of each [...] operand
    symbols: list[str]  # plain names used as operands (params, labels, globals)
    targets: list[str] = field(default_factory=list)  # branch labels
    unknown: bool = False
    ends: bool = False  # ret/exit/trap without a guard: no fall-through


@dataclass
class Block:
    instrs: list[Instr] = field(default_factory=list)
    succ: list[int] = field(default_factory=list)


def basic_blocks(items: list[tuple[list[str], Instr | None]]) -> tuple[list[Block], bool]:
    """Basic blocks and their successors; and whether the graph has a cycle (a loop)."""
    blocks: list[Block] = [Block()]
    label_block: dict[str, int] = {}
    ends_block = False
    for labels, ins in items:
        if labels:
            if blocks[-1].instrs or ends_block:
                blocks.append(Block())
            for name in labels:
                label_block[name] = len(blocks) - 1
            ends_block = False
        if ins is None:
            continue
        if ends_block:
            blocks.append(Block())
            ends_block = False
        blocks[-1].instrs.append(ins)
        if ins.targets or ins.ends:
            ends_block = True
    n = len(blocks)
    for i, b in enumerate(blocks):
        last = b.instrs[-1] if b.instrs else None
        falls = True
        if last is not None:
            for t in last.targets:
                if t in label_block:
                    b.succ.append(label_block[t])
            if last.base == "brx":  # an indirect branch: any label of the function
                b.succ.extend(set(label_block.values()))
            if last.ends or (last.base in ("bra", "brx") and not last.guarded):
                falls = False
        if falls and i + 1 < n:
            b.succ.append(i + 1)
    return blocks, has_cycle(blocks)


def has_cycle(blocks: list[Block]) -> bool:
    color = [0] * len(blocks)
    for root in range(len(blocks)):
        if color[root]:
            continue
        stack = [(root, iter(blocks[root].succ))]
        color[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
            elif color[nxt] == 1:
                return True
            elif color[nxt] == 0:
                color[nxt] = 1
                stack.append((nxt, iter(blocks[nxt].succ)))
    return False


def reachable(blocks: list[Block]) -> list[bool]:
    seen = [False] * len(blocks)
    todo = [0] if blocks else []
    while todo:
        i = todo.pop()
        if not seen[i]:
            seen[i] = True
            todo.extend(blocks[i].succ)
    return seen


def components(blocks: list[Block]) -> list[list[int]]:
    """Strongly connected components (Tarjan's, iterative), in reverse topological order."""
    index: list[int | None] = [None] * len(blocks)
    low = [0] * len(blocks)
    on_stack = [False] * len(blocks)
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in range(len(blocks)):
        if index[root] is not None:
            continue
        work = [(root, 0)]
        while work:
            v, k = work.pop()
            if k == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack[v] = True
            succ = blocks[v].succ
            if k < len(succ):
                work.append((v, k + 1))
                w = succ[k]
                seen_at = index[w]
                if seen_at is None:
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], seen_at)
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def may_reach(blocks: list[Block], gen: list[int]) -> list[int]:
    """For each block, the registers some path from the start writes before it (bit sets).
    Over the graph of strongly connected components, in topological order: what enters a
    component, or is written anywhere inside a component with a cycle, reaches all of its
    blocks — linear in the graph, however the loops nest."""
    comps = components(blocks)
    comp_of = [0] * len(blocks)
    for c, comp in enumerate(comps):
        for b in comp:
            comp_of[b] = c
    preds: list[list[int]] = [[] for _ in blocks]
    for i, block in enumerate(blocks):
        for s in block.succ:
            preds[s].append(i)
    into = [0] * len(blocks)
    out = [0] * len(blocks)
    for c in range(len(comps) - 1, -1, -1):  # Tarjan's order reversed: topological
        comp = comps[c]
        entering = 0
        for b in comp:
            for p in preds[b]:
                if comp_of[p] != c:
                    entering |= out[p]
        cyclic = len(comp) > 1 or comp[0] in blocks[comp[0]].succ
        inside = 0
        if cyclic:
            for b in comp:
                inside |= gen[b]
        for b in comp:
            if cyclic:
                into[b] = entering | inside
            else:
                into[b] = 0
                for p in preds[b]:
                    into[b] |= out[p]
            out[b] = into[b] | gen[b]
    return into
