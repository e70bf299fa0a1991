"""The markdown table of bench/gemm_bench.py results (one or more of its JSON files) with the
machine facts and each kernel's targets from issue 10, met or missed.

    python3 bench/gemm_report.py bench/results/gemm/h200-*.json > bench/results/gemm/h200-DATE.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# name -> (minimum ratio vs the nvcc build, minimum ratio vs PyTorch, what PyTorch runs)
TARGETS = {
    "scan_inclusive": (0.95, 1.0, "torch.cumsum"),
    "sgemm_128x128": (0.95, 0.8, "cuBLAS fp32, TF32 off"),
    "hgemm_mma": (0.95, 0.6, "cuBLAS fp16"),
    "hgemm_wgmma": (0.95, 0.6, "cuBLAS fp16"),
}


def _ms(c: dict) -> str:
    return f"{c['median_ms']:.4f} ({c['min_ms']:.4f}–{c['max_ms']:.4f})"


def _rate(c: dict) -> str:
    if "tflops" in c:
        return f"{c['tflops']:.1f} TFLOP/s"
    return f"{c['gbps']:.0f} GB/s"


def render(reports: list[dict]) -> str:
    lines = []
    first = reports[0]
    smi = first["machine"]["nvidia_smi"]
    lines += [
        f"Device: {first['device']}; nvidia-smi ({smi['query']}): {smi['value']}",
        f"torch {first['torch']}; TF32 for fp32 matmul: {first['tf32']}; "
        f"device-to-device copy ceiling {first['copy_ceiling_gbps']:.0f} GB/s (read + write)",
        "",
        "Times in ms: median (min–max) of the runs shown; every timed launch started from "
        "NaN-poisoned outputs, zeroed scratch and a flushed L2, and its output was compared "
        "with float64 (worst error in the last columns).",
        "",
        "| kernel | shape | runs | ours | nvcc -O3 | PyTorch | ours vs nvcc | ours vs PyTorch | "
        "ours | nvcc | PyTorch | targets | worst rel. err ours / nvcc / torch |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for rep in reports:
        for res in rep["results"]:
            name = res["kernel"]
            if "error" in res:
                lines.append(f"| {name} | — | — | error: {res['error']} |" + " |" * 9)
                continue
            t_nvcc, t_torch, what = TARGETS.get(name, (0.95, 1.0, "PyTorch"))
            for row in res["bench"]:
                o, n, t = row["ours"], row["nvcc"], row["torch"]
                rn, rt = row["ratio_vs_nvcc"], row["ratio_vs_torch"]

                def verdict(ratio, floor, baseline):
                    if not baseline["timed_outputs_ok"]:  # a wrong answer is no baseline
                        return "no valid ratio: the baseline's output was WRONG"
                    return "met" if ratio >= floor else "MISSED"

                ok = (
                    f"nvcc ≥ {t_nvcc}: {verdict(rn, t_nvcc, n)}; "
                    f"{what} ≥ {t_torch}: {verdict(rt, t_torch, t)}"
                )
                pct = ""
                if "gbps" in o and "tflops" not in o:
                    pct = f" ({100 * o['gbps'] / rep['copy_ceiling_gbps']:.0f} % of copy)"
                errs = " / ".join(
                    f"{c['timed_outputs_max_rel_err']:.1e}"
                    + ("" if c["timed_outputs_ok"] else " BAD")
                    for c in (o, n, t)
                )
                lines.append(
                    f"| {name} | {row['shape']} | {row['runs']} | {_ms(o)} | {_ms(n)} | {_ms(t)} | "
                    f"{rn:.3f}× | {rt:.3f}× | {_rate(o)}{pct} | {_rate(n)} | {_rate(t)} | {ok} | "
                    f"{errs} |"
                )
    lines.append("")
    lines.append("Correctness at the odd test shapes (float64 reference, guard bands, inputs "
                 "unchanged):")  # fmt: skip
    lines.append("")
    for rep in reports:
        for res in rep["results"]:
            if "error" in res:
                continue
            shapes = res["tests"]
            bad = [(r["shape"], w) for r in shapes for w in ("ours", "nvcc") if not r[w]["ok"]]
            worst = max((r["ours"]["max_rel_err"] for r in shapes), default=0.0)
            lines.append(
                f"- {res['kernel']} ({res['arch']}): {len(shapes)} shapes "
                f"({', '.join(r['shape'] for r in shapes)}): "
                + ("all pass, ours and nvcc's" if not bad else f"FAILED {bad}")
                + f"; worst relative error of ours {worst:.1e}"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    reports = [json.loads(Path(p).read_text()) for p in argv]
    if not reports:
        print(__doc__, file=sys.stderr)
        return 2
    sys.stdout.write(render(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
