"""Fuzz at full size: ≥ 10,000 randomly damaged PTX buffers and ≥ 1,000 malformed LSP messages
(framing and params) against one real server process per seed; the server must stay up, answer
a hover after every batch of 100, and answer every request that carried a usable id.

    .venv/bin/python bench/fuzz_server.py                 # 10,000 + 2,000 per seed, 3 seeds
    .venv/bin/python bench/fuzz_server.py --buffers 500 --messages 200 --seeds 1

Writes bench/results/fuzz-server/<machine>-<date>.json and .md (with machine facts); exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from fuzz_lsp import run_fuzz  # noqa: E402

from machine import gpu_name, result_path  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--buffers", type=int, default=10_000)
    ap.add_argument("--messages", type=int, default=2_000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=None, help="path without suffix (default: the results layout)")
    args = ap.parse_args()
    runs = []
    for seed in range(1, args.seeds + 1):
        with tempfile.TemporaryDirectory(prefix="ptxls-fuzz-") as tmp:
            result = run_fuzz(buffers=args.buffers, messages=args.messages, seed=seed, cwd=tmp)
        summary = {"seed": seed, **result.summary()}
        runs.append(summary)
        print(json.dumps(summary))
    ok = all(r["server_alive_at_end"] and not r["failures"]
             and r["requests_answered"] == r["requests_with_id_sent"] for r in runs)  # fmt: skip
    report = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "gpu": gpu_name(),
        },  # fmt: skip
        "per_seed": {"damaged_buffers": args.buffers, "malformed_messages": args.messages},
        "ok": ok,
        "runs": runs,
    }
    out = Path(args.out) if args.out else result_path("fuzz-server", "json").with_suffix("")
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        "# Fuzzing one server process",
        "",
        f"{report['when']} on {report['machine']['platform']}, {os.cpu_count()} CPUs, "
        f"Python {report['machine']['python']}. Command: `.venv/bin/python bench/fuzz_server.py "
        f"--buffers {args.buffers} --messages {args.messages} --seeds {args.seeds}`.",
        "",
        "Per seed, one server process gets the damaged buffers (didChange: 80 % whole-text "
        "replacements, 20 % incremental edits with random, often invalid ranges), then the "
        "malformed messages (requests with wrong params, notifications with wrong params, bodies "
        "that are not JSON, lying Content-Length both ways, 10**12 lengths, garbage headers, JSON "
        "that is not JSON-RPC, bad ids). A hover follows every batch of 100.",
        "",
        "| seed | buffers | messages | requests answered | hovers after batches | hover median / max "
        "(ms) | seconds | RSS at end (MB) | alive |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r['seed']} | {r['damaged_buffers']} | {r['malformed_messages']} | "
            f"{r['requests_answered']}/{r['requests_with_id_sent']} | "
            f"{r['batches_each_followed_by_a_hover']} | {r['hover_after_batch_median_ms']} / "
            f"{r['hover_after_batch_max_ms']} | {r['seconds']} | {r['server_rss_mb_at_end']} | "
            f"{'yes' if r['server_alive_at_end'] else 'NO'} |"
        )
    failures = [f for r in runs for f in r["failures"]]
    lines += ["", "Failures: " + ("none" if not failures else "; ".join(failures[:20]))]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"{'OK' if ok else 'FAILED'}: wrote {out}.json and .md")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
