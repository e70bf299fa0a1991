"""A self-contained HTML report of one or more runs side by side: tables and plots drawn as
inline SVG here (no script, no CDN, no plotting library), so the file opens anywhere offline.

Plots: pass@1 (bar) and pass@k (outline) per family; the speedup over nvcc -O3 of every
GPU-verified sample on a log axis, with each run's geometric mean; tokens per solved task.
"""

from __future__ import annotations

import html
import math

from .metrics import verification_level

COLORS = ("#3b6fb6", "#e07b39", "#4a9a5b", "#b8443f", "#7a5aa6", "#8c6d3f")


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _pct(v) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def _row(doc: dict) -> dict:
    s = doc.get("summary", {})
    return s.get("llm") or next(iter(s.values()), {})


def _legend(names: list[str]) -> str:
    items = "".join(
        f'<span class="key"><span class="sw" style="background:{COLORS[i % len(COLORS)]}"></span>{_e(n)}</span>'
        for i, n in enumerate(names)
    )
    return f'<div class="legend">{items}</div>'


def family_plot(runs: list[tuple[str, dict]]) -> str:
    rows = [_row(d) for _n, d in runs]
    fams = sorted({f for r in rows for f in r.get("families", {})})
    if not fams:
        return "<p>No families to plot.</p>"
    kmax = max((int(k) for r in rows for k in r.get("pass@k", {})), default=1)
    bar_h, gap, left, width = 12, 10, 150, 420
    group_h = bar_h * len(runs) + gap
    height = group_h * len(fams) + 40
    out = [
        f'<svg width="{left + width + 70}" height="{height}" role="img" aria-label="pass@k per family">'
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = left + tick * width
        out.append(f'<line x1="{x}" y1="10" x2="{x}" y2="{height - 25}" class="grid"/>')
        out.append(
            f'<text x="{x}" y="{height - 10}" class="tick" text-anchor="middle">{int(tick * 100)}%</text>'
        )
    for fi, fam in enumerate(fams):
        y0 = 10 + fi * group_h
        out.append(
            f'<text x="{left - 6}" y="{y0 + group_h / 2}" class="label" text-anchor="end">{_e(fam)}</text>'
        )
        for ri, r in enumerate(rows):
            d = r.get("families", {}).get(fam)
            if not d:
                continue
            y = y0 + ri * bar_h
            color = COLORS[ri % len(COLORS)]
            p1 = d["pass@k"].get("1") or 0
            pk = d["pass@k"].get(str(kmax))
            if pk is not None and kmax > 1:
                out.append(
                    f'<rect x="{left}" y="{y}" width="{pk * width:.1f}" height="{bar_h - 2}" fill="none" stroke="{color}"/>'
                )
            out.append(
                f'<rect x="{left}" y="{y}" width="{p1 * width:.1f}" height="{bar_h - 2}" fill="{color}">'
                f"<title>{_e(runs[ri][0])} {_e(fam)}: pass@1 {_pct(p1)}, pass@{kmax} {_pct(pk)} over {d['tasks']} tasks</title></rect>"
            )
            out.append(
                f'<text x="{left + max(p1, pk or 0) * width + 4:.1f}" y="{y + bar_h - 3}" class="tick">{_pct(p1)}</text>'
            )
    out.append("</svg>")
    note = f"filled: pass@1; outline: pass@{kmax}" if kmax > 1 else "pass@1"
    return "".join(out) + f'<p class="note">{note}</p>'


def speedup_plot(runs: list[tuple[str, dict]]) -> str:
    rows = [_row(d) for _n, d in runs]
    if not any(r.get("speedups") for r in rows):
        return "<p>No GPU-timed sample: speedups need a GPU (the emulator and compile-only runs have no clock).</p>"
    lo, hi = 0.125, 8.0
    left, width, lane = 150, 420, 34
    height = lane * len(runs) + 40

    def x_of(v: float) -> float:
        v = min(max(v, lo), hi)
        return left + (math.log2(v) - math.log2(lo)) / (math.log2(hi) - math.log2(lo)) * width

    out = [
        f'<svg width="{left + width + 70}" height="{height}" role="img" aria-label="speedup distribution">'
    ]
    for tick in (0.125, 0.25, 0.5, 1, 2, 4, 8):
        x = x_of(tick)
        cls = "one" if tick == 1 else "grid"
        out.append(f'<line x1="{x:.1f}" y1="8" x2="{x:.1f}" y2="{height - 25}" class="{cls}"/>')
        out.append(
            f'<text x="{x:.1f}" y="{height - 10}" class="tick" text-anchor="middle">{tick:g}×</text>'
        )
    for ri, (name, _d) in enumerate(runs):
        r = rows[ri]
        y = 14 + ri * lane
        color = COLORS[ri % len(COLORS)]
        out.append(
            f'<text x="{left - 6}" y="{y + 8}" class="label" text-anchor="end">{_e(name)}</text>'
        )
        for j, v in enumerate(r.get("speedups") or []):
            jitter = (j * 7919 % 13) - 6
            out.append(
                f'<circle cx="{x_of(v):.1f}" cy="{y + 8 + jitter * 0.9:.1f}" r="2.6" fill="{color}" opacity="0.65"><title>{v:.3f}×</title></circle>'
            )
        g = r.get("speedup_geomean")
        if g:
            gx = x_of(g)
            out.append(
                f'<line x1="{gx:.1f}" y1="{y - 4}" x2="{gx:.1f}" y2="{y + 20}" stroke="#222" stroke-width="2"><title>geomean {g:.3f}×</title></line>'
            )
    out.append("</svg>")
    return (
        "".join(out)
        + '<p class="note">each dot: one GPU-verified sample, nvcc -O3 time / its time (log scale); black bar: geometric mean</p>'
    )


def tokens_plot(runs: list[tuple[str, dict]]) -> str:
    vals = [(_row(d).get("tokens_per_solved_task")) for _n, d in runs]
    if not any(vals):
        return "<p>No tokens counted (a compiler baseline, or nothing solved).</p>"
    top = max(v for v in vals if v)
    left, width, bar = 150, 420, 18
    height = bar * len(runs) + 20
    out = [
        f'<svg width="{left + width + 110}" height="{height}" role="img" aria-label="tokens per solved task">'
    ]
    for i, ((name, _d), v) in enumerate(zip(runs, vals, strict=True)):
        y = 6 + i * bar
        out.append(
            f'<text x="{left - 6}" y="{y + 12}" class="label" text-anchor="end">{_e(name)}</text>'
        )
        w = (v or 0) / top * width
        out.append(
            f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar - 4}" fill="{COLORS[i % len(COLORS)]}"/>'
        )
        out.append(
            f'<text x="{left + w + 4:.1f}" y="{y + 12}" class="tick">{"–" if v is None else f"{v:,.0f}"}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _summary_table(runs: list[tuple[str, dict]]) -> str:
    ks = sorted(
        {
            k
            for _n, d in runs
            for row in d.get("summary", {}).values()
            for k in row.get("pass@k", {})
        },
        key=int,
    )
    head = ["run", "row", "model", "tasks", "samples", *[f"pass@{k}" for k in ks], "GPU", "emulator",
            "compile-only", "fast_1", "speedup", "rounds", "tokens/solved", "cost $", "wall s", "verified"]  # fmt: skip
    body = []
    for name, d in runs:
        model = (d.get("config", {}).get("settings") or {}).get("model") or "–"
        for row, r in d.get("summary", {}).items():
            v = r.get("verified", {})
            cells = [name, row, model if row == "llm" else "–", r["tasks"], r["samples"],
                     *[_pct(r["pass@k"].get(k)) for k in ks], v.get("gpu", 0), v.get("emulator", 0),
                     v.get("compile-only", 0), _pct(r.get("fast_1")),
                     "–" if r.get("speedup_geomean") is None else f"{r['speedup_geomean']:.2f}×",
                     "–" if r.get("rounds_to_pass") is None else f"{r['rounds_to_pass']:.1f}",
                     "–" if r.get("tokens_per_solved_task") is None else f"{r['tokens_per_solved_task']:,.0f}",
                     f"{r.get('cost_usd', 0):.4f}", f"{d.get('info', {}).get('wall_s', 0):.1f}",
                     verification_level(r)]  # fmt: skip
            body.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    return _table(head, body)


def _categories_table(runs: list[tuple[str, dict]]) -> str:
    cats = sorted(
        {
            c
            for _n, d in runs
            for r in d.get("summary", {}).values()
            for c in r.get("categories", {})
        }
    )
    if not cats:
        return "<p>No failures.</p>"
    body = []
    for name, d in runs:
        for row, r in d.get("summary", {}).items():
            body.append(
                "<tr>"
                + "".join(
                    f"<td>{_e(c)}</td>"
                    for c in [name, row, *[r.get("categories", {}).get(c, 0) for c in cats]]
                )
                + "</tr>"
            )
    return _table(["run", "row", *cats], body)


def _task_table(runs: list[tuple[str, dict]]) -> str:
    cols = [(name, row) for name, d in runs for row in d.get("summary", {})]
    tasks = sorted(
        {t for _n, d in runs for r in d.get("summary", {}).values() for t in r.get("per_task", {})}
    )
    body = []
    for t in tasks:
        fam = next(
            r["per_task"][t]["family"]
            for _n, d in runs
            for r in d["summary"].values()
            if t in r.get("per_task", {})
        )
        cells = [f"<td>{_e(t)}</td><td>{_e(fam)}</td>"]
        for name, row in cols:
            r = dict(runs)[name]["summary"][row].get("per_task", {}).get(t)
            if r is None:
                cells.append("<td>–</td>")
                continue
            ok = r["passed"] == r["samples"]
            cls = "ok" if ok else ("part" if r["passed"] else "bad")
            sp = f" · {r['speedup']:.2f}×" if r.get("speedup") else ""
            why = ", ".join(f"{c} {n}" for c, n in (r.get("categories") or {}).items())
            cells.append(
                f'<td class="{cls}" title="{_e(why)}">{r["passed"]}/{r["samples"]}{sp}</td>'
            )
        body.append("<tr>" + "".join(cells) + "</tr>")
    return _table(["task", "family", *[f"{n} · {r}" for n, r in cols]], body)


def _table(head: list[str], body: list[str]) -> str:
    return ("<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(body) + "</tbody></table>")  # fmt: skip


CSS = """
body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0;font-size:12.5px}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left}th{background:#f2f2f2}
td.ok{background:#e3f3e3}td.part{background:#fff4d6}td.bad{background:#fbe3e1}
svg text.label{font-size:12px}svg text.tick{font-size:10.5px;fill:#555}
svg line.grid{stroke:#e4e4e4}svg line.one{stroke:#888;stroke-dasharray:3 3}
.legend{margin:6px 0}.key{margin-right:14px}.sw{display:inline-block;width:11px;height:11px;margin-right:5px;vertical-align:-1px}
.note{color:#666;font-size:12px;margin:2px 0 0}
"""


def html_report(runs: list[tuple[str, dict]]) -> str:
    names = [n for n, _d in runs]
    notes = []
    for name, d in runs:
        info = d.get("info", {})
        cfg = d.get("config", {})
        s = cfg.get("settings") or {}
        notes.append(f"<li><b>{_e(name)}</b>: model {_e(s.get('model') or '–')}, "
                     f"{_e(cfg.get('samples', '?'))} sample(s) per task, candidates {_e(s.get('candidates', '?'))}, "
                     f"rounds {_e(s.get('rounds', '?'))}, temperature {_e(s.get('temperature', '?'))}; "
                     f"tests: {_e(info.get('pool', '?'))}; wall {info.get('wall_s', 0):.1f} s"
                     + (f"; replay of {_e(cfg['replay_of'])}" if cfg.get("replay_of") else "") + "</li>")  # fmt: skip
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ptxls eval: {_e(" vs ".join(names))}</title>
<style>{CSS}</style></head><body>
<h1>ptxls eval — {_e(" vs ".join(names))}</h1>
<ul>{"".join(notes)}</ul>
<p class="note">pass@k: unbiased estimator over each task's samples. GPU: verified on a GPU; emulator: on the
CPU emulator (never called GPU-verified, never timed); compile-only: ptxas and the interface only.
fast_1: share of tasks whose first sample is GPU-verified and faster than nvcc -O3 in the same test.</p>
<h2>Summary</h2>{_summary_table(runs)}
<h2>pass@k per family</h2>{_legend(names)}{family_plot(runs)}
<h2>Speedup over nvcc -O3</h2>{speedup_plot(runs)}
<h2>Tokens per solved task</h2>{tokens_plot(runs)}
<h2>Failures by category</h2>{_categories_table(runs)}
<h2>Tasks</h2>{_task_table(runs)}
</body></html>
"""
