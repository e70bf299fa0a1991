"""Soak: one real server process for minutes under mixed traffic — hovers, lenses, symbols,
completions, Show PTX and GPU-test commands (some cancelled, some replaced), damaged edits,
broken frames, bursts of didOpen, a document above the size limit, a FIFO named by a command —
with a hover on a small document every ~100 ms whose latency is the figure that matters.

    .venv/bin/python bench/soak_server.py [--seconds 300] [--seed 1] [--basic] [--part NAME] [--tree DIR]

Writes bench/results/soak/<machine>-<date>[-basic][-part].json and .md: worst/p99/median hover latency,
requests sent and answered, messages of each kind, the server's resident memory (sampled) and
its peak, processes of its own left when it ends. Exits 1 when a request went unanswered, the
server died, or a process of its own outlived it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from fuzz_lsp import SEED_TEXTS, damage, malformed  # noqa: E402
from raw_lsp import RawServer, frame  # noqa: E402

from machine import gpu_name, result_path  # noqa: E402

SMALL = (ROOT / "examples" / "broken.ptx").read_text()
HOVER_LINE = next(i for i, line in enumerate(SMALL.splitlines()) if "mad.lo.s32" in line)
HOVER_COL = SMALL.splitlines()[HOVER_LINE].index("mad") + 1
CU = (ROOT / "examples" / "vec_add.cu").read_text()


def _status(pid: int) -> dict:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    return {k: int(v.split()[0]) // 1024 for k, v in (x.split(":", 1) for x in lines)
            if k in ("VmRSS", "VmHWM")}  # fmt: skip


def _started(pid: int) -> int | None:
    """The process's start time (clock ticks after boot): a pid reused later has another."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except OSError:
        return "?"


def _descendants(pid: int) -> set[int]:
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        for k in map(int, kids):
            if k not in out:
                out.add(k)
                todo.append(k)
    return out


def soak(seconds: float, seed: int, project: Path, basic: bool = False, tree: str = "") -> dict:
    rng = random.Random(seed)
    ids = iter(range(10**6, 10**9))
    (project / ".git").mkdir()
    small = project / "small.ptx"
    small.write_text(SMALL)
    fuzz = project / "fuzz me.ptx"
    cu = project / "vec_add.cu"
    cu.write_text(CU)
    os.mkfifo(project / "hang.cu")
    counts = {k: 0 for k in ("hover_probe", "request", "command", "cancelled", "replaced",
                             "damaged_edit", "broken_frame", "open_burst_docs", "large_doc")}  # fmt: skip
    outstanding, hovers, rss = [], [], []
    env = {"PYTHONPATH": str(Path(tree).resolve() / "src")} if tree else None
    with RawServer(cwd=str(project), env=env) as server:
        server.initialize(str(project), {"ptxls": {"debounceMs": 50}})
        server.open(small.as_uri(), SMALL)
        server.open(fuzz.as_uri(), SEED_TEXTS[0])
        server.open(cu.as_uri(), CU, language="cuda")
        server.hover(small.as_uri(), HOVER_LINE, HOVER_COL, timeout=60)
        pid, version, text = server.proc.pid, 1, SEED_TEXTS[0]
        started = last_probe = last_rss = time.monotonic()

        def request(method: str, params: dict) -> int:
            msg_id = next(ids)
            server.send(frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
            outstanding.append(msg_id)
            counts["request"] += 1
            return msg_id

        while time.monotonic() - started < seconds:
            now = time.monotonic()
            if now - last_probe >= 0.1:
                t = time.monotonic()
                reply = server.hover(small.as_uri(), HOVER_LINE, HOVER_COL, timeout=60)
                hovers.append(time.monotonic() - t)
                assert "mad" in str(reply.get("result")), reply
                counts["hover_probe"] += 1
                last_probe = time.monotonic()
            if now - last_rss >= 1.0:
                rss.append(_status(pid).get("VmRSS", 0))
                last_rss = now
            kind = rng.random()
            if basic and 0.80 <= kind < 0.867:  # the mix: no commands, bursts, big docs
                kind = 0.9
            doc = {"uri": fuzz.as_uri()}
            pos = {"line": rng.randint(0, 40), "character": rng.randint(0, 30)}
            if kind < 0.35:  # a damaged edit of the fuzz buffer
                text = damage(rng.choice([text, SEED_TEXTS[0], SEED_TEXTS[1]]), rng)
                version += 1
                server.notify("textDocument/didChange", {"textDocument": {
                    "uri": fuzz.as_uri(), "version": version}, "contentChanges": [{"text": text}]})  # fmt: skip
                counts["damaged_edit"] += 1
            elif kind < 0.60:  # ordinary requests on it
                method = rng.choice(["textDocument/hover", "textDocument/codeLens",
                                     "textDocument/documentSymbol", "textDocument/completion",
                                     "textDocument/definition", "textDocument/codeAction"])  # fmt: skip
                params = {"textDocument": doc, "position": pos}
                if method == "textDocument/codeAction":
                    params = {"textDocument": doc, "range": {"start": pos, "end": pos},
                              "context": {"diagnostics": []}}  # fmt: skip
                elif method in ("textDocument/codeLens", "textDocument/documentSymbol"):
                    params = {"textDocument": doc}
                request(method, params)
            elif kind < 0.80:  # broken frames and malformed messages
                data, msg_id = malformed(rng, fuzz.as_uri(), lambda: next(ids))
                server.send(data + b"\r\n")
                if msg_id is not None:
                    outstanding.append(msg_id)
                counts["broken_frame"] += 1
            elif kind < 0.86:  # commands: Show PTX (real nvcc), a GPU test, a FIFO; cancel some
                target = rng.choice([cu.as_uri(), (project / "hang.cu").as_uri()])
                command = rng.choice(["ptxls.showPtx", "ptxls.runGpuTest"])
                msg_id = request("workspace/executeCommand",
                                 {"command": command, "arguments": [target, "vec_add"]})  # fmt: skip
                counts["command"] += 1
                roll = rng.random()
                if roll < 0.4:
                    server.notify("$/cancelRequest", {"id": msg_id})
                    counts["cancelled"] += 1
                elif roll < 0.6:
                    request("workspace/executeCommand", {"command": command,
                            "arguments": [target, "vec_add"]})  # fmt: skip
                    counts["replaced"] += 1
            elif kind < 0.865:  # a burst of didOpens (and their closes)
                n = rng.randint(20, 100)
                uris = [(project / f"burst{i}.ptx").as_uri() for i in range(n)]
                server.send(b"".join(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                    "params": {"textDocument": {"uri": u, "languageId": "ptx", "version": 1,
                                                "text": rng.choice(SEED_TEXTS)}}}) for u in uris))  # fmt: skip
                server.send(b"".join(frame({"jsonrpc": "2.0", "method": "textDocument/didClose",
                    "params": {"textDocument": {"uri": u}}}) for u in uris))  # fmt: skip
                counts["open_burst_docs"] += n
            elif kind < 0.867:  # a document above the size limit, opened and closed
                big = (project / "big.ptx").as_uri()
                server.open(big, SEED_TEXTS[0] + "// " + "x" * (rng.randint(3, 10) << 20))
                request("textDocument/hover", {"textDocument": {"uri": big}, "position": pos})
                server.notify("textDocument/didClose", {"textDocument": {"uri": big}})
                counts["large_doc"] += 1
            else:  # a hover somewhere in the damaged buffer
                request("textDocument/hover", {"textDocument": doc, "position": pos})
            time.sleep(0.005)
        answered, unanswered = 0, []
        server.send(b"\r\n")
        for msg_id in outstanding:
            try:
                server.wait_reply(msg_id, timeout=120)
                answered += 1
            except TimeoutError:
                unanswered.append(msg_id)
        peak = _status(pid).get("VmHWM", 0)
        alive = server.proc.poll() is None
        own = {(p, _started(p)) for p in _descendants(pid)}
        server.wait_reply(server.request("shutdown"), timeout=30)
        t = time.monotonic()
        server.notify("exit")
        code = server.proc.wait(timeout=30)
        exit_s = time.monotonic() - t
    time.sleep(1.0)
    # a zombie is dead (its exit status unread by whichever init adopted it): not left running
    left = [f"{p} {_cmdline(p)}" for p, born in sorted(own)
            if _started(p) == born and _state(p) not in ("Z", "X", None)]  # fmt: skip
    h = sorted(hovers)
    return {
        "seconds": seconds, "seed": seed, "counts": counts,
        "requests_sent": len(outstanding), "requests_answered": answered,
        "unanswered": unanswered[:20],
        "hover_probe_ms": {"n": len(h), "median": round(statistics.median(h) * 1000, 1),
                           "p99": round(h[int(len(h) * 0.99) - 1] * 1000, 1),
                           "max": round(h[-1] * 1000, 1)},
        "server_rss_mb": {"median": statistics.median(rss) if rss else None,
                          "max_sampled": max(rss) if rss else None, "peak_vmhwm": peak},
        "alive_at_end": alive, "exit_code": code, "exit_seconds": round(exit_s, 3),
        "processes_left": left,
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None, help="a folder (default: bench/results/soak/)")
    ap.add_argument("--basic", action="store_true",
                    help="issue 25's mix: requests, damaged edits, broken frames only")  # fmt: skip
    ap.add_argument("--part", default="", help="a suffix of the result files (after -basic)")
    ap.add_argument("--tree", default="", metavar="DIR",
                    help="soak the ptxls tree in DIR (e.g. a `git archive` of a commit), not "
                         "this checkout")  # fmt: skip
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ptxls-soak-") as tmp:
        result = soak(args.seconds, args.seed, Path(tmp), basic=args.basic, tree=args.tree)
    ok = (result["requests_answered"] == result["requests_sent"] and result["alive_at_end"]
          and not result["processes_left"])  # fmt: skip
    machine = {"platform": platform.platform(), "python": platform.python_version(),
               "cpu_count": os.cpu_count(), "gpu": gpu_name(), "load_avg_at_end": os.getloadavg(),
               "note": "shared machine: latencies include whatever else ran on its cores "
                       "(the load average says how much)"}  # fmt: skip
    report = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine,
              "command": f".venv/bin/python bench/soak_server.py --seconds {args.seconds:g} "
                         f"--seed {args.seed}" + (" --basic" if args.basic else "")
                         + (f" --part {args.part}" if args.part else "")
                         + (f" --tree {args.tree}" if args.tree else ""),
              "mix": "basic" if args.basic else "full", "ok": ok, **result}  # fmt: skip
    part = "-".join(x for x in ("basic" if args.basic else "", args.part) if x)
    stem = result_path("soak", "json", part).with_suffix("")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        stem = Path(args.out) / stem.name
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    c, hp, mem = result["counts"], result["hover_probe_ms"], result["server_rss_mb"]
    lines = [
        "# Soak: one server, mixed traffic" + (" (issue 25's mix)" if args.basic else ""),
        "",
        f"{report['when']}, {machine['platform']}, {machine['cpu_count']} CPUs, Python "
        f"{machine['python']}; {machine['note']} (load average at the end "
        f"{', '.join(f'{x:.1f}' for x in machine['load_avg_at_end'])}). "
        f"Command: `{report['command']}`.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| duration | {args.seconds:g} s |",
        f"| hover probes on a small document (every ~100 ms) | {hp['n']} |",
        f"| hover latency median / p99 / worst | {hp['median']} / {hp['p99']} / {hp['max']} ms |",
        f"| requests sent / answered | {result['requests_sent']} / {result['requests_answered']} |",
        f"| commands (Show PTX, GPU test; some on a FIFO) / cancelled / replaced | "
        f"{c['command']} / {c['cancelled']} / {c['replaced']} |",
        f"| damaged edits / broken frames and malformed messages | {c['damaged_edit']} / "
        f"{c['broken_frame']} |",
        f"| documents opened in bursts / documents above the size limit | "
        f"{c['open_burst_docs']} / {c['large_doc']} |",
        f"| server memory median / max sampled / peak (MB) | {mem['median']} / "
        f"{mem['max_sampled']} / {mem['peak_vmhwm']} |",
        f"| alive at the end / exit code / exit took | {result['alive_at_end']} / "
        f"{result['exit_code']} / {result['exit_seconds']} s |",
        f"| processes of its own left after exit | {len(result['processes_left'])} |",
        "",
        f"Result: {'OK' if ok else 'FAILED'}.",
    ]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(json.dumps(report, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
