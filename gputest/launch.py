"""Evaluating a spec for one size: scalar values and the launch configuration."""

from __future__ import annotations

from . import exprs
from .spec import TestSpec


def launch_dims(
    spec: TestSpec, env: dict
) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    def dims(text: str) -> tuple[int, int, int]:
        vals = [max(1, exprs.evaluate_int(e, env)) for e in exprs.split_dims(text)]
        return tuple((vals + [1, 1])[:3])  # type: ignore[return-value]

    # A grid of 0 blocks is a launch error, so n = 0 runs one block: a kernel without a bounds
    # check then shows itself by writing into the guard band.
    return (
        dims(spec.launch.grid),
        dims(spec.launch.block),
        exprs.evaluate_int(spec.launch.shared, env),
    )


def scalar_env(spec: TestSpec, n: int) -> dict:
    env: dict = {"n": n}
    for p in spec.params:
        if p.role == "size":
            env[p.name] = n
    for p in spec.params:
        if p.role == "scalar":
            env[p.name] = exprs.evaluate(p.value or "0", env)
    return env
