"""Domain results → LSP types: the one module that knows both.

Features compute in domain terms (``Problem``, ``Span``, ``OutlineItem``, a kernel's line and
columns, markdown text) and hand the result to a function here; none of them builds an
lsprotocol object itself. The server object (app.py) and progress.py build the protocol's own
messages (log, show, publish, progress); registration options stay where a feature registers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lsprotocol import types

from ptxls.diagnostics.model import Fix, Problem, Severity
from ptxls.frontend.ptx import Span
from ptxls.frontend.ptx_index import OutlineItem

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}

_SYMBOL_KIND = {
    "entry": types.SymbolKind.Function,
    "function": types.SymbolKind.Function,
    "label": types.SymbolKind.Key,
    "variable": types.SymbolKind.Variable,
}

_COMPLETION_KIND = {
    "register": types.CompletionItemKind.Variable,
    "special-register": types.CompletionItemKind.Constant,
    "directive": types.CompletionItemKind.Keyword,
    "modifier": types.CompletionItemKind.EnumMember,
    "opcode": types.CompletionItemKind.Function,
    "label": types.CompletionItemKind.Reference,
    "snippet": types.CompletionItemKind.Snippet,
}

# What a hover joined from several providers puts between their texts.
HOVER_SEPARATOR = "\n\n---\n\n"


# -- places ------------------------------------------------------------------------------------


def range_of(span: Span) -> types.Range:
    return types.Range(
        start=types.Position(line=span.start.line, character=span.start.col),
        end=types.Position(line=span.end.line, character=span.end.col),
    )


def line_range(line: int, start_col: int, end_col: int) -> types.Range:
    """Columns ``start_col``..``end_col`` of one line (a kernel's name, a token)."""
    return types.Range(
        start=types.Position(line=line, character=start_col),
        end=types.Position(line=line, character=end_col),
    )


def location(uri: str, span: Span) -> types.Location:
    return types.Location(uri=uri, range=range_of(span))


# -- diagnostics -------------------------------------------------------------------------------


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
        # the fix travels with the diagnostic: the editor hands it back in the code-action request
        data={"fix": _fix_data(p.fix)} if p.fix else None,
    )


def _fix_data(fix: Fix) -> dict:
    return {"title": fix.title, "line": fix.line, "col": fix.col,
            "old": fix.old_text, "new": fix.new_text}  # fmt: skip


def quick_fix(uri: str, diagnostic: types.Diagnostic, lines: list[str]) -> types.CodeAction | None:
    """The quick fix a diagnostic carries, when the buffer still holds the text it replaces
    (the person may have edited since the check): else None, never a stale edit."""
    data = diagnostic.data
    fix = data.get("fix") if isinstance(data, dict) else None
    if not isinstance(fix, dict):
        return None
    try:
        title, line, col = str(fix["title"]), int(fix["line"]), int(fix["col"])
        old, new = str(fix["old"]), str(fix["new"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (0 <= line < len(lines)) or col < 0 or lines[line][col : col + len(old)] != old:
        return None
    edit = types.TextEdit(
        range=types.Range(
            start=types.Position(line=line, character=col),
            end=types.Position(line=line, character=col + len(old)),
        ),
        new_text=new,
    )
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        is_preferred=True,
        edit=types.WorkspaceEdit(changes={uri: [edit]}),
    )


def to_diagnostics(problems: Sequence[Problem], lines: list[str] | None = None):
    return [to_diagnostic(p, lines) for p in problems]


# -- hovers ------------------------------------------------------------------------------------


def markdown(text: str, client_reads_markdown: bool = True) -> types.MarkupContent:
    """Our hover and completion texts are markdown; to a client that lists only plain text
    among the formats it reads they go as they are (the markdown source reads as text)."""
    kind = types.MarkupKind.Markdown if client_reads_markdown else types.MarkupKind.PlainText
    return types.MarkupContent(kind=kind, value=text)


def markdown_hover(text: str, where: Span | types.Range | None) -> types.Hover:
    """A markdown hover over ``where`` (a domain span, a range from line_range, or none)."""
    rng = range_of(where) if isinstance(where, Span) else where
    return types.Hover(contents=markdown(text), range=rng)


def join_hovers(
    hovers: list[types.Hover], client_reads_markdown: bool = True
) -> types.Hover | None:
    """Several providers' hovers on one spot as one (the first one's range), in the format the
    client reads."""
    if not hovers:
        return None
    parts = [
        h.contents.value if isinstance(h.contents, types.MarkupContent) else str(h.contents)
        for h in hovers
    ]
    return types.Hover(
        contents=markdown(HOVER_SEPARATOR.join(parts), client_reads_markdown),
        range=hovers[0].range,
    )


# -- commands: code lenses and code actions ----------------------------------------------------


def command(title: str, name: str, arguments: list) -> types.Command:
    return types.Command(title=title, command=name, arguments=arguments)


def code_lens(where: types.Range, title: str, name: str, arguments: list) -> types.CodeLens:
    return types.CodeLens(range=where, command=command(title, name, arguments))


def code_action(
    title: str, name: str, arguments: list, kind: str = "refactor.rewrite"
) -> types.CodeAction:
    return types.CodeAction(
        title=title, kind=types.CodeActionKind(kind), command=command(title, name, arguments)
    )


# -- outline and completion --------------------------------------------------------------------


def document_symbol(item: OutlineItem) -> types.DocumentSymbol:
    return types.DocumentSymbol(
        name=item.name,
        kind=_SYMBOL_KIND[item.kind],
        range=range_of(item.span),
        selection_range=range_of(item.selection),
        detail=item.detail or None,
        children=[document_symbol(c) for c in item.children] or None,
    )


@dataclass
class Completion:
    """One completion in domain words; ``kind`` is a key of _COMPLETION_KIND."""

    label: str
    kind: str
    detail: str | None = None
    documentation_markdown: str | None = None
    insert_text: str | None = None  # plain text, not a snippet
    filter_text: str | None = None
    sort_text: str | None = None


def completion_item(c: Completion, client_reads_markdown: bool = True) -> types.CompletionItem:
    return types.CompletionItem(
        label=c.label,
        kind=_COMPLETION_KIND[c.kind],
        detail=c.detail,
        documentation=(
            None
            if c.documentation_markdown is None
            else markdown(c.documentation_markdown, client_reads_markdown)
        ),
        insert_text=c.insert_text,
        insert_text_format=types.InsertTextFormat.PlainText if c.insert_text else None,
        filter_text=c.filter_text,
        sort_text=c.sort_text,
    )


def completion_list(
    items: list[Completion], client_reads_markdown: bool = True
) -> types.CompletionList:
    return types.CompletionList(
        is_incomplete=False,
        items=[completion_item(c, client_reads_markdown) for c in items],
    )


# -- workspace edits ---------------------------------------------------------------------------


def _insert_at_start(uri: str, text: str, version: int | None = None) -> types.TextDocumentEdit:
    return types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
        edits=[types.TextEdit(range=line_range(0, 0, 0), new_text=text)],
    )


def new_file_edit(uri: str, text: str, *, may_exist: bool = False) -> types.WorkspaceEdit:
    """Create ``uri`` and put ``text`` in it. ``may_exist``: an untitled document the client may
    already hold (then it is reused); otherwise an existing file makes the edit fail."""
    options = (
        types.CreateFileOptions(ignore_if_exists=True)
        if may_exist
        else types.CreateFileOptions(overwrite=False, ignore_if_exists=False)
    )
    return types.WorkspaceEdit(
        document_changes=[types.CreateFile(uri=uri, options=options), _insert_at_start(uri, text)]
    )


def replace_all_edit(uri: str, version: int | None, old: str, text: str) -> types.WorkspaceEdit:
    """Replace the whole of ``old`` (the document's current text, at ``version``) by ``text``."""
    lines = old.split("\n")
    whole = types.Range(
        start=types.Position(line=0, character=0),
        end=types.Position(line=len(lines) - 1, character=len(lines[-1])),
    )
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri, version=version
                ),
                edits=[types.TextEdit(range=whole, new_text=text)],
            )
        ]
    )
