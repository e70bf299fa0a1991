"""didChange → publishDiagnostics through a real LSP client, against raw ptxas on the same text.

For a small (~50 lines, hand-written) and a large (~24k lines, nvcc-generated) PTX file, each
round edits a comment (so the text, and ptxas's work, is new), and times:
  - server: from sending didChange to the publish that carries ptxas's result for that version;
  - raw:    ptxas (the same binary, same -arch) on the same text, as a subprocess.
The two are interleaved in one run so machine noise hits both alike. Overhead = server − debounce
− raw; the target is ≤ 20 % of raw at the median.

    .venv/bin/python bench/diagnostics_latency.py [--rounds 30]
Writes bench/results/diagnostics-latency/<machine>-<date>.{json,md}.

    .venv/bin/python bench/diagnostics_latency.py --instant-cpu
The instant lints alone (``instant_check``) on the large file, a fresh text each round as after an
edit: thread CPU time and wall time, printed (no server, nothing written). With
``PYTHONPATH=<a worktree of another commit>/src`` it measures that commit's implementation.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp.client import make_test_lsp_client

from ptxls.frontend.ptx import parse_ptx
from ptxls.toolchain.arch import choose_arch
from ptxls.toolchain.discovery import cuda_include_dirs, find_nvcc, find_ptxas

from machine import result_path  # bench/ is the script's folder

ROOT = Path(__file__).resolve().parent.parent
DEBOUNCE_MS = 150


def large_ptx() -> str:
    """~24k lines of nvcc output from bench/kernels/big_poly.cu (generated, not committed)."""
    nvcc = find_nvcc()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "big.ptx"
        inc = [f"-I{d}" for d in cuda_include_dirs()]
        subprocess.run(
            [
                nvcc.path,
                "-ptx",
                "-arch=sm_90",
                "-O3",
                *inc,
                str(ROOT / "bench" / "kernels" / "big_poly.cu"),
                "-o",
                str(out),
            ],
            check=True,
        )
        return out.read_text()


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def raw_ptxas(text: str, ptxas: str, arch: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "raw.ptx"
        src.write_text(text)
        t0 = time.perf_counter()
        subprocess.run(
            [ptxas, f"-arch={arch}", str(src), "-o", str(Path(tmp) / "o.cubin")],
            capture_output=True,
        )
        return time.perf_counter() - t0


async def measure(name: str, text: str, rounds: int, tmpdir: Path) -> dict:
    client = make_test_lsp_client()
    publishes: list[tuple[float, types.PublishDiagnosticsParams]] = []
    finished: dict[int, float] = {}  # version → arrival time of the publish carrying ptxas's result
    first: dict[int, float] = {}  # version → arrival of its first publish (the instant lints)
    arrived = asyncio.Event()  # no busy polling: it would steal a core from ptxas
    file_name = f"{name}.ptx"

    def on_publish(params: types.PublishDiagnosticsParams) -> None:
        now = time.perf_counter()
        publishes.append((now, params))
        if params.version is not None:
            first.setdefault(params.version, now)

    def on_log(params: types.LogMessageParams) -> None:
        # The server logs each finished ptxas run right after publishing its result, so the
        # publish for that version received last before this line is ptxas's.
        if f"for {file_name} v" in params.message:
            version = int(params.message.rsplit(" v", 1)[1])
            times = [t for t, p in publishes if p.version == version]
            if times:
                finished[version] = times[-1]
                arrived.set()

    client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = on_publish
    client.protocol.fm.features[types.WINDOW_LOG_MESSAGE] = on_log
    await client.start_io(sys.executable, "-m", "ptxls.server", "serve")
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            initialization_options={
                "ptxls": {"debounceMs": DEBOUNCE_MS, "saveOnlyAboveBytes": 10_000_000}
            },
        )
    )
    uri = (tmpdir / file_name).as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="ptx", version=1, text=text)
        )
    )
    module, _ = parse_ptx(text)
    ptxas = find_ptxas(needs_isa=module.version)
    arch = choose_arch(None, module.arch)

    async def wait_final(version: int, timeout: float = 120) -> float:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if version in finished:
                return finished[version]
            arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), deadline - time.perf_counter())
        raise TimeoutError(f"no ptxas publish for v{version}")

    await wait_final(1)
    # The protocol's own floor: a request the server answers at once (hover on a blank line),
    # through the same client and pipes. Whatever ptxls adds on top of this is its own cost.
    floor_s = []
    for _ in range(20):
        t0 = time.perf_counter()
        await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=4, character=0),
            )
        )
        floor_s.append(time.perf_counter() - t0)
    server_s, raw_s, instant_s = [], [], []
    for r in range(rounds):
        version = r + 2
        new_text = text + f"\n// edit {r}\n"
        t0 = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=new_text)],
            )
        )
        server_s.append(await wait_final(version) - t0)
        instant_s.append(first[version] - t0)
        raw_s.append(await asyncio.to_thread(raw_ptxas, new_text, ptxas.path, arch))
    await client.shutdown_session()
    await client.stop()
    debounce = DEBOUNCE_MS / 1000
    overhead = [s - debounce - r for s, r in zip(server_s, raw_s, strict=True)]
    p50_raw = statistics.median(raw_s)
    return {
        "file": name,
        "lines": text.count("\n") + 1,
        "bytes": len(text),
        "ptxas": ptxas.describe(),
        "rounds": rounds,
        "server_p50_ms": 1000 * statistics.median(server_s),
        "server_p95_ms": 1000 * pct(server_s, 0.95),
        "raw_ptxas_p50_ms": 1000 * p50_raw,
        "raw_ptxas_p95_ms": 1000 * pct(raw_s, 0.95),
        "debounce_ms": DEBOUNCE_MS,
        "lsp_round_trip_p50_ms": 1000 * statistics.median(floor_s),
        "overhead_p50_ms": 1000 * statistics.median(overhead),
        "overhead_p95_ms": 1000 * pct(overhead, 0.95),
        "overhead_ratio_p50": statistics.median(overhead) / p50_raw,
        "server_minus_debounce_over_raw_p50": (statistics.median(server_s) - debounce) / p50_raw,
        # the first publish of each version: the instant lints (before ptxas's result)
        "instant_p50_ms": 1000 * statistics.median(instant_s),
        "instant_p95_ms": 1000 * pct(instant_s, 0.95),
        "instant_over_debounce_p95_ms": 1000 * (pct(instant_s, 0.95) - debounce),
        # issue 22: ptxas's publish within 1.05x raw ptxas + the debounce
        "server_over_raw_plus_debounce_p50": statistics.median(server_s) / (p50_raw + debounce),
    }


def instant_cpu(text: str, rounds: int) -> None:
    import ptxls
    from ptxls.diagnostics.engine import instant_check

    instant_check(text)  # imports, regex compilation, the ISA table
    cpu, wall = [], []
    for r in range(rounds):
        edited = text + f"\n// edit {r}\n"  # a new string, as each edit gives the server
        c0, w0 = time.thread_time(), time.perf_counter()
        instant_check(edited)
        cpu.append(1000 * (time.thread_time() - c0))
        wall.append(1000 * (time.perf_counter() - w0))
    load = " ".join(f"{x:.2f}" for x in __import__("os").getloadavg())
    print(
        f"instant_check, {text.count(chr(10)) + 1} lines, {rounds} rounds ({ptxls.__file__}): "
        f"CPU p50 {statistics.median(cpu):.1f} ms, min {min(cpu):.1f} ms; "
        f"wall p50 {statistics.median(wall):.1f} ms; load {load}"
    )


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--large-rounds", type=int, default=10)
    ap.add_argument("--out", type=Path, help="the .json (and .md beside it) instead of today's")
    ap.add_argument("--instant-cpu", action="store_true", help="instant_check's cost alone")
    args = ap.parse_args()
    if args.instant_cpu:
        instant_cpu(large_ptx(), args.rounds)
        return
    small = (ROOT / "examples" / "vec_add.ptx").read_text()
    load_before = " ".join(f"{x:.2f}" for x in __import__("os").getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        rows = [
            await measure("small_vec_add", small, args.rounds, Path(tmp)),
            await measure("large_nvcc_poly", large_ptx(), args.large_rounds, Path(tmp)),
        ]
    machine = {
        "host": platform.node(),
        "cpu_count": __import__("os").cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        # the machine is shared: the 1/5/15-min load averages before and after the run
        "load": load_before,
        "load_after": " ".join(f"{x:.2f}" for x in __import__("os").getloadavg()),
    }
    out = args.out or result_path("diagnostics-latency", "json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine, "results": rows}, indent=2))
    lines = [
        "# didChange → publishDiagnostics vs raw ptxas",
        "",
        f"Machine: {machine['platform']}, {machine['cpu_count']} CPUs, Python {machine['python']}, {machine['date']}.",
        f"Debounce {DEBOUNCE_MS} ms. Overhead = server latency − debounce − raw ptxas, per round (interleaved).",
        "",
        "| file | lines | rounds | instant lints p50 / p95 ms | server p50 / p95 ms | raw ptxas p50 / p95 ms | overhead p50 / p95 ms | overhead / raw (p50) | server / (raw + debounce) p50 | LSP round trip p50 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['file']} | {r['lines']} | {r['rounds']} | {r['instant_p50_ms']:.1f} / {r['instant_p95_ms']:.1f} "
            f"| {r['server_p50_ms']:.1f} / {r['server_p95_ms']:.1f} | "
            f"{r['raw_ptxas_p50_ms']:.1f} / {r['raw_ptxas_p95_ms']:.1f} | {r['overhead_p50_ms']:.1f} / {r['overhead_p95_ms']:.1f} | "
            f"{100 * r['overhead_ratio_p50']:.0f} % | {r['server_over_raw_plus_debounce_p50']:.3f} | {r['lsp_round_trip_p50_ms']:.1f} |"
        )
    lines.append("")
    lines.append(f"ptxas: {rows[0]['ptxas']}")
    lines.append("")
    lines.append(
        "Issue 22's goals: instant lints within the debounce + 30 ms (p95 over it: "
        + ", ".join(f"{r['file']} {r['instant_over_debounce_p95_ms']:.1f} ms" for r in rows)
        + "); ptxas's publish within 1.05 x (raw ptxas + debounce) on the large file "
        f"(p50: {rows[-1]['server_over_raw_plus_debounce_p50']:.3f}). Load at the start: {machine['load']}, at the end: {machine['load_after']}."
    )
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())
