"""Domain results → LSP types. The only place that knows both."""

from __future__ import annotations

from lsprotocol import types

from ptxls.diagnostics.model import Problem, Severity

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


def to_diagnostic(p: Problem, lines: list[str] | None = None) -> types.Diagnostic:
    end_col = p.end_col
    if end_col <= p.col and lines is not None and 0 <= p.line < len(lines):
        # A problem with no token (e.g. "missing .target") covers the line's text, or one
        # character, so every client can show and hover it.
        end_col = max(len(lines[p.line].rstrip()), p.col + 1)
    elif end_col <= p.col:
        end_col = p.col + 1
    return types.Diagnostic(
        range=types.Range(
            start=types.Position(line=p.line, character=p.col),
            end=types.Position(line=p.last_line, character=end_col),
        ),
        message=p.message,
        severity=_SEVERITY[p.severity],
        source=p.source,
        code=p.code,
    )
