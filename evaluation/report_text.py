"""The terminal side of a run: a one-line progress bar while it runs, the tables at the end, and
the side-by-side table of ``--compare``."""

from __future__ import annotations

import sys
import time

from .metrics import verification_level
from .records import SampleRecord


class ProgressBar:
    """One line, rewritten in place on a terminal (``\\r``); elsewhere (CI logs, pipes) a line
    at most every 10 % of the run, so a log holds a dozen lines, not one per sample."""

    def __init__(self, stream=None, width: int = 28):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.width = width
        self.started = time.monotonic()
        self.passed = self.failed = 0
        self._last_tenth = -1

    def __call__(self, rec: SampleRecord, done: int, total: int) -> None:
        if rec.passed:
            self.passed += 1
        else:
            self.failed += 1
        frac = done / total if total else 1.0
        elapsed = time.monotonic() - self.started
        eta = elapsed / max(1, self.passed + self.failed) * (total - done)
        filled = int(round(frac * self.width))
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} "
                f"passed {self.passed} failed {self.failed}  {_clock(elapsed)} elapsed, "
                f"~{_clock(eta)} left  ({rec.task} {rec.row})")  # fmt: skip
        if self.tty:
            self.stream.write("\r" + line[:160].ljust(160) + ("\n" if done >= total else ""))
            self.stream.flush()
        elif int(frac * 10) != self._last_tenth or done >= total:
            self._last_tenth = int(frac * 10)
            self.stream.write(line + "\n")
            self.stream.flush()


def _clock(s: float) -> str:
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _x(v) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _num(v, fmt="{:.1f}") -> str:
    return "-" if v is None else fmt.format(v)


def summary_table(summary: dict, info: dict | None = None) -> str:
    """The overall table (one line per row: the model, nvcc, Triton), then the failure
    categories and the families."""
    lines = []
    if info:
        lines.append(f"tests: {info.get('pool', '?')}; verification: {info.get('device', '?')}")
    ks = sorted({k for row in summary.values() for k in row.get("pass@k", {})}, key=int)
    head = ["row", "tasks", "samples"] + [f"pass@{k}" for k in ks] + [
        "gpu", "emu", "compile", "fast_1", "speedup", "rounds", "tokens/solved", "cost $", "verified"]  # fmt: skip
    rows = []
    for name, r in summary.items():
        v = r.get("verified", {})
        rows.append([name, str(r["tasks"]), str(r["samples"])]
                    + [_pct(r["pass@k"].get(k)) for k in ks]
                    + [str(v.get("gpu", 0)), str(v.get("emulator", 0)), str(v.get("compile-only", 0)),
                       _pct(r.get("fast_1")), _x(r.get("speedup_geomean")),
                       _num(r.get("rounds_to_pass")), _num(r.get("tokens_per_solved_task"), "{:.0f}"),
                       f"{r.get('cost_usd', 0):.4f}", verification_level(r)])  # fmt: skip
    lines += _grid(head, rows)
    for name, r in summary.items():
        cats = r.get("categories") or {}
        if cats:
            lines.append(f"{name} failures: " + ", ".join(f"{c} {n}" for c, n in cats.items()))
        t = r.get("tokens", {})
        if name == "llm":
            lines.append(
                f"llm tokens: prompt {t.get('prompt', 0)}, completion {t.get('completion', 0)} "
                f"(reasoning {t.get('reasoning', 0)}); {r.get('requests', 0)} requests, "
                f"{r.get('retries', 0)} retried; samples' own time {r.get('sample_wall_s', 0):.1f} s"
            )
            if r.get("replies_without_usage"):
                lines.append(
                    f"llm tokens: {r['replies_without_usage']} replies reported no usage (a "
                    "streamed reply carries none unless the endpoint adds it): counts are low; "
                    "PTXLS_LLM_STREAM=false makes every reply report it"
                )
    llm = summary.get("llm") or next(iter(summary.values()), None)
    if llm and llm.get("families"):
        k = ks[-1] if ks else "1"
        cols = ["1"] + ([str(k)] if str(k) != "1" else [])
        fam_rows = [
            [f, str(d["tasks"]), *[_pct(d["pass@k"].get(c)) for c in cols]]
            for f, d in llm["families"].items()
        ]
        lines.append("")
        lines += _grid(["family", "tasks", *[f"pass@{c}" for c in cols]], fam_rows)
    return "\n".join(lines)


def task_table(summary: dict) -> str:
    """Per task: each row's passes and speedup (what ``--tasks-table`` prints)."""
    names = sorted({t for r in summary.values() for t in r.get("per_task", {})})
    head = (
        ["task", "family"]
        + [f"{row} pass" for row in summary]
        + [f"{row} speedup" for row in summary]
        + ["failures"]
    )
    rows = []
    for t in names:
        first = next(r["per_task"][t] for r in summary.values() if t in r.get("per_task", {}))
        cells = [t, first["family"]]
        cells += [
            f"{r['per_task'][t]['passed']}/{r['per_task'][t]['samples']}"
            if t in r["per_task"]
            else "-"
            for r in summary.values()
        ]
        cells += [
            _x(r["per_task"][t]["speedup"]) if t in r["per_task"] else "-" for r in summary.values()
        ]
        cats: dict[str, int] = {}
        for r in summary.values():
            for c, n in (r["per_task"].get(t, {}).get("categories") or {}).items():
                cats[c] = cats.get(c, 0) + n
        cells.append(", ".join(f"{c} {n}" for c, n in cats.items()))
        rows.append(cells)
    return "\n".join(_grid(head, rows))


def compare_table(runs: list[tuple[str, dict]]) -> str:
    """Runs side by side (their ``llm`` rows, else their first row)."""
    ks = sorted(
        {
            k
            for _n, s in runs
            for row in s.get("summary", {}).values()
            for k in row.get("pass@k", {})
        },
        key=int,
    )
    head = (
        ["run", "model", "tasks", "samples"]
        + [f"pass@{k}" for k in ks]
        + ["fast_1", "speedup", "rounds", "tokens/solved", "cost $", "verified"]
    )
    rows = []
    for name, data in runs:
        summary = data.get("summary", {})
        r: dict = summary.get("llm") or next(iter(summary.values()), {})
        model = (data.get("config", {}).get("settings") or {}).get("model") or "-"
        rows.append([name, str(model), str(r.get("tasks", 0)), str(r.get("samples", 0))]
                    + [_pct(r.get("pass@k", {}).get(k)) for k in ks]
                    + [_pct(r.get("fast_1")), _x(r.get("speedup_geomean")), _num(r.get("rounds_to_pass")),
                       _num(r.get("tokens_per_solved_task"), "{:.0f}"), f"{r.get('cost_usd', 0):.4f}",
                       verification_level(r) if r else "-"])  # fmt: skip
    return "\n".join(_grid(head, rows))


def _grid(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = (
        [max(len(str(c)) for c in col) for col in zip(head, *rows, strict=True)]
        if rows
        else [len(h) for h in head]
    )
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*head), fmt.format(*["-" * w for w in widths])] + [
        fmt.format(*r) for r in rows
    ]
