"""The lowering loop's own overhead per round on this machine (CPU, compile-checked only).

    .venv/bin/python bench/lowering_overhead.py [--repeats 20]

Writes bench/results/lowering-overhead/<machine>-<date>.json. See lowering_common.py for what is measured.
"""

from __future__ import annotations

import argparse
import json

from lowering_common import machine, measure_overhead, run
from machine import result_path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out", default=str(result_path("lowering-overhead", "json")))
    args = ap.parse_args()
    result = {
        "machine": machine(),
        "scenario": "vec_add broken then fixed, 1 candidate, instant scripted model, no GPU",
        "overhead": run(measure_overhead(args.repeats)),
    }
    text = json.dumps(result, indent=2)
    print(text)
    with open(args.out, "w") as f:
        f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
