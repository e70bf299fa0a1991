"""The demo's lowering and GPU-test steps; each room provides its own step."""

from __future__ import annotations

from pathlib import Path


def lowering_step(examples: Path, out) -> bool:
    from ptxls.lowering.demo import lowering_step as step

    return step(examples, out)


def gpu_step(examples: Path, out) -> bool:
    from ptxls.gputest.demo import gpu_demo_step

    return gpu_demo_step(examples, out)
