"""Time from "Run GPU test" to the hover, through the real language server, and the bad kernels
through that same server process.

A minimal stdio LSP client (JSON-RPC with Content-Length framing, no client library) starts
``python -m ptxls.server serve``, opens examples/vec_add.ptx, and times executeCommand
``ptxls.runGpuTest`` followed by the hover on the ``.entry`` line: once cold (new server, new
worker), then warm. Then every kernel in examples/gpu/bad/ is run through the same server, each
followed by a good vec_add test; the hover and the gpu-test diagnostics of each are recorded and
the server must still be the same process at the end.

    python bench/gputest_lsp_latency.py   # bench/results/gputest-lsp/<machine>-<date>.json
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from machine import gpu_name, result_path  # bench/ is the script's folder

ROOT = Path(__file__).resolve().parent.parent


class Client:
    def __init__(self, cmd: list[str], log: Path | None = None):
        err = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 (the server's life)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=err, cwd=ROOT)  # fmt: skip
        self.next_id = 0
        self.replies: dict[int, queue.Queue] = {}
        self.diagnostics: dict[str, list] = {}
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _send(self, msg: dict) -> None:
        body = json.dumps(msg).encode()
        with self.lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                k, _, v = line.decode().partition(":")
                headers[k.strip().lower()] = v.strip()
            msg = json.loads(out.read(int(headers["content-length"])))
            if "id" in msg and "method" in msg:  # a request from the server: answer it
                result = [{}] if msg["method"] == "workspace/configuration" else None
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            elif "id" in msg:
                self.replies.setdefault(msg["id"], queue.Queue()).put(msg)
            elif msg.get("method") == "textDocument/publishDiagnostics":
                self.diagnostics[msg["params"]["uri"]] = msg["params"]["diagnostics"]

    def request(self, method: str, params, timeout: float = 120) -> dict:
        self.next_id += 1
        rid = self.next_id
        self.replies.setdefault(rid, queue.Queue())
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        reply = self.replies[rid].get(timeout=timeout)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result")

    def notify(self, method: str, params) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})


def entry_line(text: str, kernel: str) -> tuple[int, int]:
    for i, line in enumerate(text.splitlines()):
        if ".entry" in line and kernel in line:
            return i, line.index(kernel)
    raise ValueError(kernel)


def run_and_hover(c: Client, path: Path, kernel: str = "vec_add") -> tuple[float, float, dict, str]:
    uri, text = path.resolve().as_uri(), path.read_text()
    line, col = entry_line(text, kernel)
    t0 = time.perf_counter()
    result = c.request(
        "workspace/executeCommand", {"command": "ptxls.runGpuTest", "arguments": [uri, kernel]}
    )
    t_cmd = time.perf_counter() - t0
    hover = c.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": line, "character": col}},
    )
    t_hover = time.perf_counter() - t0
    return t_cmd, t_hover, result, (hover or {}).get("contents", {}).get("value", "")


def start_server(log: Path | None) -> Client:
    c = Client([sys.executable, "-m", "ptxls.server", "serve"], log)
    c.request("initialize", {"processId": os.getpid(), "rootUri": ROOT.as_uri(), "capabilities": {
        "window": {"workDoneProgress": True}, "workspace": {"codeLens": {"refreshSupport": True}}}})  # fmt: skip
    c.notify("initialized", {})
    return c


def main(out: Path, warm_runs: int, bad_kernels: bool = True, colds: int = 1,
         log: Path | None = None) -> int:  # fmt: skip
    good = ROOT / "examples" / "vec_add.ptx"
    # Cold: a new server (and so a new worker) per run. On a machine just started, the first
    # one also pays the OS's first reads of nvcc, ptxas and the libraries (page cache): with
    # --colds 2 or more, the later ones are what a new server costs on a running machine.
    cold_runs = []
    for _ in range(colds - 1):
        c = start_server(log)
        uri = good.resolve().as_uri()
        c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "ptx",
                                                           "version": 1, "text": good.read_text()}})  # fmt: skip
        cold_runs.append(run_and_hover(c, good))
        c.request("shutdown", None)
        c.notify("exit", None)
        c.proc.wait(timeout=30)
    c = start_server(log)
    opened = set()

    def open_doc(path: Path) -> None:
        uri = path.resolve().as_uri()
        if uri not in opened:
            opened.add(uri)
            c.notify(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": uri,
                        "languageId": "ptx",
                        "version": 1,
                        "text": path.read_text(),
                    }
                },
            )

    open_doc(good)
    cold = run_and_hover(c, good)
    cold_runs.append(cold)
    warm = [run_and_hover(c, good) for _ in range(warm_runs)]
    bad_results = {}
    bad_files = sorted((ROOT / "examples" / "gpu" / "bad").glob("*.ptx")) if bad_kernels else []
    for bad in bad_files:
        open_doc(bad)
        _, t_hover, result, hover = run_and_hover(c, bad)
        time.sleep(0.2)  # let the publish that followed the command arrive
        diags = [
            d["message"]
            for d in c.diagnostics.get(bad.resolve().as_uri(), [])
            if d.get("source") == "gpu-test"
        ]
        _, _, after, _ = run_and_hover(c, good)
        bad_results[bad.name] = {"status": result["status"], "seconds": round(t_hover, 3),
                                 "hover": hover, "gpu_test_diagnostics": diags,
                                 "next_good_test": after["status"]}  # fmt: skip
    pid_alive = c.proc.poll() is None
    c.request("shutdown", None)
    c.notify("exit", None)
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "gpu": gpu_name(),
        "what": "executeCommand ptxls.runGpuTest then textDocument/hover on the .entry line, vec_add, 6 cases vs nvcc",
        "cold_command_s": round(cold[0], 3), "cold_to_hover_s": round(cold[1], 3),
        "cold_runs_to_hover_s": [round(r[1], 3) for r in cold_runs],
        "cold_after_first_median_s": (round(statistics.median(r[1] for r in cold_runs[1:]), 3)
                                      if len(cold_runs) > 1 else None),
        "warm_to_hover_s": [round(w[1], 3) for w in warm],
        "warm_to_hover_median_s": round(statistics.median(w[1] for w in warm), 3) if warm else None,
        "cold_status": cold[2]["status"], "cold_hover": cold[3],
        "server_alive_after_bad_kernels": pid_alive,
        "bad_kernels": bad_results,
    }  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    md = [f"# Run GPU test through the language server ({result['gpu']}, {result['date']})", "",
          f"cold (new server + worker): {result['cold_runs_to_hover_s']} s to the hover "
          f"(median after the first: {result['cold_after_first_median_s']}); warm median "
          f"{result['warm_to_hover_median_s']} s of {result['warm_to_hover_s']}", "", cold[3], ""]  # fmt: skip
    for name, r in bad_results.items():
        md += [f"## {name}: {r['status']} ({r['seconds']} s); next good test: {r['next_good_test']}", "",
               r["hover"], "", "gpu-test diagnostic:", "", *[f"    {line}" for d in r["gpu_test_diagnostics"] for line in d.splitlines()], ""]  # fmt: skip
    md.append(f"server still the same process after all of them: {pid_alive}")
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md[:3]))
    for name, r in bad_results.items():
        print(f"{name:<22} {r['status']:<8} next good test: {r['next_good_test']}")
    print(f"server alive: {pid_alive}")
    ok = (
        cold[2]["status"] == "pass"
        and pid_alive
        and all(r["next_good_test"] == "pass" for r in bad_results.values())
    )
    return 0 if ok else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--warm", type=int, default=5)
    ap.add_argument("--no-bad", action="store_true", help="vec_add only (no bad kernels)")
    ap.add_argument("--colds", type=int, default=1, help="new servers, each timed cold")
    ap.add_argument("--server-log", type=Path, help="the servers' stderr (timestamped log)")
    a = ap.parse_args()
    sys.exit(main(a.out or result_path("gputest-lsp", "json"), a.warm, not a.no_bad, a.colds,
                  a.server_log))  # fmt: skip
