"""Scripted "models" for validating ``ptxls eval`` without a real one (tests and
bench/eval_overhead.py): responders for tests/scripted_llm.py that answer each task of the suite
with nvcc's PTX of its reference, or with a planted wrong kernel of a chosen failure kind.

Which task a request is about is read from the request itself, as a model would: the task's
kernel name, last mentioned in the first user message (the few-shot examples come before the
task, and no example is a suite kernel while the suite is evaluated). The sample is read from
the seed (``ptxls eval`` gives sample i the seed ``seed + 1000 * i``).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable

from ptxls.evaluation.suite import Task, load_suite
from ptxls.lowering.nvcc_reference import lower_with_nvcc

from scripted_llm import Step, fenced

BASE_SEED = 1234


def suite_tasks(names: list[str]) -> list[Task]:
    by_name = {t.name: t for t in load_suite()}
    return [by_name[n] for n in names]


def nvcc_ptx(tasks: list[Task], arch: str = "sm_90") -> dict[str, str]:
    """kernel name → nvcc's PTX of the task's reference.cu (the entry renamed to the kernel)."""

    async def one(t: Task) -> tuple[str, str]:
        res = await lower_with_nvcc(t.reference_cu.read_text(), file_path=str(t.reference_cu),
                                    kernel=t.kernel, arch=arch)  # fmt: skip
        assert res.ok, res.message
        return t.kernel, res.ptx

    async def all_of() -> dict[str, str]:
        return dict(await asyncio.gather(*(one(t) for t in tasks)))

    return asyncio.run(all_of())


def asked_kernel(body: dict, kernels: list[str]) -> str | None:
    """The task kernel a chat request is about."""
    users = [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"]
    text = users[0] if users else ""
    best, where = None, -1
    for k in kernels:
        for m in re.finditer(rf"\b{re.escape(k)}\b", text):
            if m.start() > where:
                best, where = k, m.start()
    return best


def sample_of(body: dict) -> int:
    seed = body.get("seed")
    return 0 if seed is None else (int(seed) - BASE_SEED) // 1000


# ---- planted failures: what each does to nvcc's PTX, and the category ptxls eval must give it


def ptxas_error(ptx: str) -> str:
    """An instruction ptxas does not know, inside the entry's body."""
    return ptx.replace("\tret;", "\tbogus.instruction.f32 %f1;\n\tret;", 1)


def wrong_result(ptx: str) -> str:
    """Every global store dropped: the outputs keep the harness's poison ("never written")."""
    return re.sub(r"^\s*st\.global[^\n]*\n", "", ptx, flags=re.MULTILINE)


def no_bounds_check(ptx: str) -> str:
    """The `if (i < n)` guard gone: threads past n write beyond the output."""
    return re.sub(r"^\s*@%p\d+\s+bra\s+\$L__BB\d+_\d+;\n", "", ptx, count=1, flags=re.MULTILINE)


def dropped_parameter(ptx: str) -> str:
    """The entry's last parameter removed (and its load): ptxas-clean, wrong interface."""
    params = re.findall(r"^\s*\.param \.\w+ \w+(?:,)?\s*$", ptx, flags=re.MULTILINE)
    last = params[-1].strip().rstrip(",")
    name = last.split()[-1]
    ptx = re.sub(rf",\s*\n\s*{re.escape(last)}\s*\n", "\n", ptx, count=1)
    # its load becomes a constant, so the body still assembles
    return re.sub(rf"ld\.param\.(\w+)\s+(%\w+), \[{re.escape(name)}\];", r"mov.\1 \2, 1;", ptx)


REFUSAL = "I'm sorry, but I can't help with writing that kernel."

PLANTED: dict[str, tuple[Callable[[str], Step], str]] = {
    "ptxas-error": (lambda ptx: Step(content=fenced(ptxas_error(ptx))), "ptxas-error"),
    "refusal": (lambda ptx: Step(content=REFUSAL), "refusal"),
    "truncation": (lambda ptx: Step(content="```ptx\n" + ptx[: len(ptx) // 2], finish_reason="length"), "truncation"),
    "interface": (lambda ptx: Step(content=fenced(dropped_parameter(ptx))), "interface"),
    "wrong-result": (lambda ptx: Step(content=fenced(wrong_result(ptx))), "wrong-result"),
    "race-or-oob": (lambda ptx: Step(content=fenced(no_bounds_check(ptx))), "race-or-oob"),
    "endpoint-error": (lambda ptx: Step(status=400, error="the scripted endpoint refuses this task"), "endpoint-error"),
}  # fmt: skip


def responder(ptx_by_kernel: dict[str, str], plan: dict[str, str] | None = None,
              wrong_samples: dict[str, set[int]] | None = None):  # fmt: skip
    """A scripted model. ``plan``: kernel → a PLANTED kind it always answers with (else nvcc's
    PTX); ``wrong_samples``: kernel → samples answered with a wrong result (the mixed model)."""
    plan = plan or {}
    wrong_samples = wrong_samples or {}
    kernels = list(ptx_by_kernel)

    def respond(body: dict, _i: int) -> Step:
        k = asked_kernel(body, kernels)
        if k is None:
            return Step(content="I do not know which kernel you mean.")
        ptx = ptx_by_kernel[k]
        if k in plan:
            return PLANTED[plan[k]][0](ptx)
        if sample_of(body) in wrong_samples.get(k, set()):
            return PLANTED["wrong-result"][0](ptx)
        return Step(content=fenced(ptx), chunk_size=4000)

    return respond


def flaky(inner, *, drop_s: float = 1.5):
    """The same model behind a flaky endpoint: of each distinct request, one in two is first
    answered 429 with Retry-After, and one in two has its stream stop after the first chunk for
    longer than the client waits (a dropped stream: the client times out and asks again). A
    request meets each at most once, as the client retries a timeout once only."""
    import hashlib
    import threading

    seen: dict[str, int] = {}
    lock = threading.Lock()

    def respond(body: dict, i: int) -> Step:
        key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        with lock:
            attempt = seen[key] = seen.get(key, -1) + 1
        h = int(key[:8], 16)
        plan = [kind for kind, on in (("429", h % 2 == 0), ("drop", h % 4 < 2)) if on]
        kind = plan[attempt] if attempt < len(plan) else ""
        if kind:
            respond.counts[kind] += 1
        if kind == "429":
            return Step(status=429, error="rate limited (scripted)", headers={"Retry-After": "0.2"})
        step = inner(body, i)
        if kind == "drop" and step.status == 200:
            return Step(content=step.content, finish_reason=step.finish_reason, stall=drop_s,
                        chunk_size=step.chunk_size)  # fmt: skip
        return step

    respond.counts = {"429": 0, "drop": 0}
    return respond
