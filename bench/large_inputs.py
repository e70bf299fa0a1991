"""Large inputs against one server each: how long a hover on a small document waits while the
server takes a 100 MB single-line didOpen, a 1M-line file, 3,000 didOpens at once, a 32 MB JSON
array (issue 25's cases: 10.5 s, 1.6 s, 27 s, 1.4 s before).

    .venv/bin/python bench/large_inputs.py [--part NAME] [--only SUBSTRING] [--baseline DIR] [--tree DIR]

For each case: a fresh server with a small PTX document open; the input is sent; then a hover
on the small document every 50 ms for 12 s (20 s for the burst). The figure is the worst hover
(each hover is sent after the whole input was written, so it includes the server's reading and
parsing of the input ahead of it). Writes bench/results/large-inputs/<machine>-<date>[-part].json/.md
(``--part`` names a run, e.g. before/after a change; ``--only`` runs the cases whose name holds it).
Side by side with an older commit, alternating case by case on the same machine load:

    git archive 7d82a39 | tar -x -C /tmp/before   # (an empty folder) the tree before a change
    .venv/bin/python bench/large_inputs.py --baseline /tmp/before --part NAME
"""

from __future__ import annotations

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

from raw_lsp import RawServer, frame  # noqa: E402

from machine import gpu_name, result_path  # noqa: E402

SMALL = ROOT / "examples" / "broken.ptx"
TEXT = SMALL.read_text()
LINE = next(i for i, line in enumerate(TEXT.splitlines()) if "mad.lo.s32" in line)
COL = TEXT.splitlines()[LINE].index("mad") + 1
HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"
BEFORE_S = {"100 MB single line": 10.5, "1M-line file": 1.6, "3,000 didOpens": 27.0,
            "32 MB JSON array": 1.4}  # fmt: skip


def _opens(tmp: Path):
    small = HEADER + ".visible .entry k()\n{\n ret;\n}\n"
    return b"".join(
        frame(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": (tmp / f"o{i}.ptx").as_uri(),
                        "languageId": "ptx",
                        "version": 1,
                        "text": small,
                    }
                },
            }
        )  # fmt: skip
        for i in range(3000)
    )


def _open(uri: str, text: str, language: str = "ptx") -> bytes:
    return frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": language, "version": 1, "text": text}}})  # fmt: skip


def case(name: str, make, seconds: float, tree: str = "") -> dict:
    """One case against a fresh server: this tree's, or the tree whose ``src/`` is ``tree``."""
    env = {"PYTHONPATH": str(Path(tree).resolve() / "src")} if tree else None
    with (
        tempfile.TemporaryDirectory(prefix="ptxls-large-") as tmp,
        RawServer(cwd=tmp, env=env) as s,
    ):
        s.initialize(tmp)
        s.open(SMALL.as_uri(), TEXT)
        s.hover(SMALL.as_uri(), LINE, COL, timeout=60)
        data = make(Path(tmp))
        t0 = time.monotonic()
        s.send(data)
        sent = time.monotonic() - t0
        worst, n = 0.0, 0
        while time.monotonic() - t0 < seconds:
            t = time.monotonic()
            reply = s.hover(SMALL.as_uri(), LINE, COL, timeout=120)
            assert "mad" in str(reply.get("result")), reply
            worst, n = max(worst, time.monotonic() - t), n + 1
            time.sleep(0.05)
        rss = 0
        for line in Path(f"/proc/{s.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                rss = int(line.split()[1]) // 1024
    return {"case": name, "tree": tree or "this", "input_mb": round(len(data) / 1e6, 1), "written_in_s": round(sent, 2),
            "hovers": n, "worst_hover_ms": round(worst * 1000, 1), "server_peak_mb": rss,
            "before_s": BEFORE_S[name]}  # fmt: skip


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="", help="suffix of the result files")
    ap.add_argument("--only", default="", help="run only the cases whose name holds this")
    ap.add_argument("--tree", default="", metavar="DIR",
                    help="measure the ptxls tree in DIR instead of this checkout")  # fmt: skip
    ap.add_argument("--baseline", default="", metavar="DIR",
                    help="also run each case against the ptxls tree in DIR (e.g. a `git archive` "
                         "of an older commit), alternating, for a side-by-side comparison")  # fmt: skip
    opts = ap.parse_args()
    cases = [
        ("100 MB single line", lambda t: _open((t / "big.ptx").as_uri(),
                                               HEADER + "// " + "x" * (100 << 20) + "\n"), 12),
        ("1M-line file", lambda t: _open((t / "lines.ptx").as_uri(),
                                         HEADER + "// c\n" * 1_000_000), 12),
        ("3,000 didOpens", _opens, 20),
        ("32 MB JSON array", lambda t: _open((t / "big.json").as_uri(),
                                             json.dumps(list(range(4_000_000))), "json"), 12),
    ]  # fmt: skip
    rows = []
    for name, make, seconds in cases:
        if opts.only not in name:
            continue
        for tree in ([opts.baseline] if opts.baseline else []) + [opts.tree]:
            rows.append(case(name, make, seconds, tree))
            print(json.dumps(rows[-1]), flush=True)
    machine = {"platform": platform.platform(), "python": platform.python_version(),
               "cpu_count": os.cpu_count(), "gpu": gpu_name(), "load_avg": os.getloadavg(),
               "note": "shared 2-core machine, about 8 people working on it"}  # fmt: skip
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    stem = result_path("large-inputs", "json", opts.part).with_suffix("")
    stem.with_suffix(".json").write_text(
        json.dumps({"when": when, "machine": machine, "rows": rows}, indent=2) + "\n"
    )
    lines = [
        "# Large inputs: the worst wait of a hover on a small document",
        "",
        f"{when}, {machine['platform']}, {machine['cpu_count']} CPUs, Python {machine['python']} "
        f"({machine['note']}; load average {', '.join(f'{x:.1f}' for x in machine['load_avg'])}"
        "). Command: `.venv/bin/python bench/large_inputs.py"
        + (f" --part {opts.part}" if opts.part else "")
        + (f" --baseline {opts.baseline}" if opts.baseline else "")
        + (f" --tree {opts.tree}" if opts.tree else "")
        + "`. Before: issue 25's figures.",
        "",
        "| input | tree | MB | hovers | worst hover | issue 25 | server peak MB |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {r['case']} | {r['tree']} | {r['input_mb']} | {r['hovers']} | "
            f"{r['worst_hover_ms']} ms | "
            f"{r['before_s']} s | {r['server_peak_mb']} |"
            for r in rows
        ],  # fmt: skip
    ]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
