"""Bad PTX never gets a traceback: mutated library kernels (tokens swapped, lines dropped or
repeated) either run or are refused with a line; only a launch that does not match the
kernel's parameters is the caller's ValueError/KeyError."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from library_runner import LIBRARY, run_kernel

from ptxls import emulator

KERNELS = ["vec_add", "reduce_sum", "transpose", "softmax_rows", "scan_inclusive", "bias_gelu_f16"]


def _mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    for _ in range(rng.randint(1, 2)):
        i = rng.randrange(len(lines))
        op = rng.random()
        toks = lines[i].replace(",", " ").split()
        if op < 0.4 and toks:
            other = rng.choice(lines).replace(",", " ").split() or toks
            lines[i] = lines[i].replace(rng.choice(toks), rng.choice(other), 1)
        elif op < 0.7:
            del lines[i]
        else:
            lines.insert(i, rng.choice(lines))
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(4))
def test_mutated_kernels_run_or_are_refused(seed):
    rng = random.Random(seed)
    outcomes = {"ran": 0, "refused": 0, "launch mismatch": 0}
    for _ in range(25):
        kernel = rng.choice(KERNELS)
        text = _mutate((LIBRARY / kernel / "kernel.ptx").read_text(), rng)
        try:
            run_kernel(
                kernel,
                300,
                ptx=text,
                budget=emulator.Budget(max_thread_instructions=2_000_000, seconds=5),
            )
            outcomes["ran"] += 1
        except emulator.Refused as e:
            assert str(e)
            outcomes["refused"] += 1
        except (ValueError, KeyError) as e:  # the spec's launch no longer fits the kernel
            assert "parameter" in str(e) or "kernel" in str(e), e
            outcomes["launch mismatch"] += 1
    assert sum(outcomes.values()) == 25
