"""bench/gputest_profile.sh's before.json + after.json (one device run each pair) → one JSON and a
Markdown table of the split: warm medians part by part, cold totals, the bench kernel's runs.

    python bench/gputest_profile_report.py --run NAME BEFORE.json AFTER.json [--run ...] \
        --machine MACHINE.txt --out bench/results/gputest-profile/h200-<date>
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

# The figures the issue (22) measured through the language server on 2026-12-03.
ISSUE = {"warm": 0.99, "cold": 1.84}
ORDER = ["total", "spec", "spec_check", "hello", "build", "worker_request", "inputs", "upload",
         "kernel", "download", "reference", "check", "baseline", "timed_setup", "timed_launches",
         "timed_inputs_check", "shortcut_probe", "timing", "worker_other", "report"]  # fmt: skip


def _s(v) -> str:
    return "—" if v is None else f"{v:.4f}"


def table(before: dict, after: dict) -> list[str]:
    wb, wa = before["vec_add"]["warm_median"], after["vec_add"]["warm_median"]
    lines = ["| part (s, warm median) | before | after | after/before |", "|:--|--:|--:|--:|"]
    for k in ORDER:
        b, a = wb.get(k), wa.get(k)
        if b is None and a is None:
            continue
        ratio = f"{a / b:.2f}" if a is not None and b else "—"
        lines.append(f"| {k} | {_s(b)} | {_s(a)} | {ratio} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--run", nargs=3, action="append", metavar=("NAME", "BEFORE", "AFTER"))
    ap.add_argument("--machine", type=Path)
    ap.add_argument("--out", type=Path, required=True, help="path without extension")
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    runs = {name: {"before": json.loads(Path(b).read_text()), "after": json.loads(Path(f).read_text())}
            for name, b, f in a.run}  # fmt: skip
    machine = a.machine.read_text() if a.machine else ""
    md = ["# Where one \"Run GPU test\" of vec_add (6 cases) goes, before and after", "",
          "Measured through `gputest.api.run_gpu_test` (no language server: the device has no",
          "pygls) by `bench/gputest_profile.sh`, before and after side by side in each device run.",
          "Parts: see bench/gputest_profile.py. The builds run beside `hello`, so the parts do not",
          "add up to `total`.", "", "```", machine.strip(), "```", ""]  # fmt: skip
    if a.note:
        md += [a.note, ""]
    for name, r in runs.items():
        b, f = r["before"], r["after"]
        vb, va = b["vec_add"], f["vec_add"]
        wb, wa = vb["warm_median"]["total"], va["warm_median"]["total"]
        cb = [x["total"] for x in vb["cold_runs"]]
        ca = [x["total"] for x in va["cold_runs"]]
        md += [f"## {name}: {b['label']} vs {f['label']} ({f['date']})", "",
               f"- warm median: before **{wb:.3f} s**, after **{wa:.3f} s** ({wb / wa:.1f}× "
               f"faster); after / issue's 0.99 s = {wa / ISSUE['warm']:.2f}",
               f"- cold (new worker, empty build cache): before {cb}, after {ca}; after's median "
               f"/ issue's 1.84 s = {sorted(ca)[len(ca) // 2] / ISSUE['cold']:.2f}",
               f"- every run's status: before {sorted({x['status'] for x in vb['cold_runs'] + vb['warm_runs']})}, "
               f"after {sorted({x['status'] for x in va['cold_runs'] + va['warm_runs']})}",
               f"- timed launches' spread (max / median, worst case): before "
               f"{vb['warm_median'].get('timed_spread_max_over_median')}, after "
               f"{va['warm_median'].get('timed_spread_max_over_median')}", ""]  # fmt: skip
        md += table(b, f) + [""]
        for label, d in (("before", b), ("after", f)):
            bk = d["bench_kernel"]
            if bk["runs"]:
                md.append(f"`ptxls bench` kernel {bk['kernel']} ({label}; first run cold): "
                          + "; ".join(f"total {x['total']:.3f} s (build {x.get('build', 0):.3f}, "
                                      f"worker {x.get('worker_request', 0):.3f})"
                                      for x in bk["runs"]))  # fmt: skip
        md.append("")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(
        json.dumps({"machine": machine, "issue_figures_s": ISSUE, "runs": runs}, indent=2)
    )
    a.out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
