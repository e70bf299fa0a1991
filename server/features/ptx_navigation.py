"""Reading PTX: outline, go to definition, references, hover and completion for .ptx buffers."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from ptxls.diagnostics import resources
from ptxls.diagnostics.engine import split_lines
from ptxls.frontend import ptx_index
from ptxls.frontend.ptx import PtxModule, Span, parse_ptx

from ..app import PtxlsServer
from .languages import PTX, language_of

try:  # instruction knowledge (opcodes, modifiers, special registers, directives)
    from ptxls.diagnostics import isa
except ImportError:  # pragma: no cover - the table is part of the package
    isa = None

_SYMBOL_KIND = {
    "entry": types.SymbolKind.Function,
    "function": types.SymbolKind.Function,
    "label": types.SymbolKind.Key,
    "variable": types.SymbolKind.Variable,
}


def _range(span: Span) -> types.Range:
    return types.Range(
        start=types.Position(line=span.start.line, character=span.start.col),
        end=types.Position(line=span.end.line, character=span.end.col),
    )


class ParseCache:
    """One parse per (uri, version): hover, definition and outline on the same version share it.

    A small buffer is parsed where it is asked for (a few milliseconds). A large one (a
    megabyte of PTX takes about half a second to parse) is parsed in a worker thread, so the
    event loop keeps answering while it runs; until that parse is done, requests on the
    buffer get nothing rather than a freeze, and the next request after it finds the result."""

    BACKGROUND_ABOVE_CHARS = 256_000

    def __init__(self) -> None:
        self._entries: dict[str, tuple[int | None, PtxModule, list[str]]] = {}
        self._pending: dict[str, tuple[int | None, asyncio.Future]] = {}

    def get(self, server: PtxlsServer, uri: str) -> tuple[PtxModule, list[str]] | None:
        doc = server.open_document(uri)
        if doc is None or language_of(uri, doc.language_id) != PTX:
            return None
        cached = self._entries.get(uri)
        if cached and cached[0] == doc.version:
            return cached[1], cached[2]
        source = doc.source
        if len(source) > self.BACKGROUND_ABOVE_CHARS and self._start_background(
            uri, doc.version, source
        ):
            return None
        module, lines = _parse(source)
        self._entries[uri] = (doc.version, module, lines)
        return module, lines

    def _start_background(self, uri: str, version: int | None, source: str) -> bool:
        """Start (once per version) a parse in a thread; False where no loop runs here."""
        pending = self._pending.get(uri)
        if pending and pending[0] == version and not pending[1].done():
            return True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        task = loop.run_in_executor(None, _parse, source)

        def done(fut: asyncio.Future) -> None:
            if self._pending.get(uri, (None, None))[1] is fut:
                del self._pending[uri]
            if fut.cancelled() or fut.exception() is not None:
                return
            cached = self._entries.get(uri)
            if cached is None or cached[0] is None or version is None or cached[0] < version:
                self._entries[uri] = (version, *fut.result())

        task.add_done_callback(done)
        self._pending[uri] = (version, task)
        return True

    def drop(self, uri: str) -> None:
        self._entries.pop(uri, None)
        self._pending.pop(uri, None)


def _parse(source: str) -> tuple[PtxModule, list[str]]:
    module, _ = parse_ptx(source)
    return module, split_lines(source)


def register(server: PtxlsServer) -> None:
    cache = ParseCache()
    server.ptx_parse_cache = cache
    server.did_close_hooks.append(lambda ls, p: cache.drop(p.text_document.uri))

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def symbols(ls: PtxlsServer, params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
        got = cache.get(ls, params.text_document.uri)
        if got is None:
            return []

        def convert(item: ptx_index.OutlineItem) -> types.DocumentSymbol:
            return types.DocumentSymbol(
                name=item.name,
                kind=_SYMBOL_KIND[item.kind],
                range=_range(item.span),
                selection_range=_range(item.selection),
                detail=item.detail or None,
                children=[convert(c) for c in item.children] or None,
            )

        return [convert(i) for i in ptx_index.outline(got[0])]

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: PtxlsServer, params: types.DefinitionParams) -> types.Location | None:
        got = cache.get(ls, params.text_document.uri)
        if got is None:
            return None
        ref = ptx_index.name_at(got[0], params.position.line, params.position.character)
        span = ptx_index.definition(ref, got[0]) if ref else None
        return types.Location(uri=params.text_document.uri, range=_range(span)) if span else None

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    def references(ls: PtxlsServer, params: types.ReferenceParams) -> list[types.Location]:
        got = cache.get(ls, params.text_document.uri)
        if got is None:
            return []
        ref = ptx_index.name_at(got[0], params.position.line, params.position.character)
        if ref is None:
            return []
        spans = ptx_index.references(ref, got[0], params.context.include_declaration)
        return [types.Location(uri=params.text_document.uri, range=_range(s)) for s in spans]

    def hover(ls: PtxlsServer, params: types.HoverParams) -> types.Hover | None:
        got = cache.get(ls, params.text_document.uri)
        if got is None:
            return None
        module, lines = got
        line, col = params.position.line, params.position.character
        ref = ptx_index.name_at(module, line, col)
        if ref is not None and ref.kind == "function":
            return _usage_hover(ls, params.text_document.uri, ref)
        if ref is not None and ref.kind == "register":
            return _markdown(ptx_index.describe_register(ref, module), ref.span)
        if ref is not None and ref.kind in ("label", "param"):
            uses = len(ptx_index.references(ref, module, include_declaration=False))
            where = ptx_index.definition(ref, module)
            at = f"defined on line {where.start.line + 1}" if where else "not defined"
            kind = "label" if ref.kind == "label" else "kernel parameter"
            extra = ""
            if ref.kind == "param" and ref.function:
                for i, p in enumerate(ref.function.params):
                    if p.name == ref.name:
                        extra = f" — `{p.type}`, parameter {i + 1} of `{ref.function.name}`"
            return _markdown(f"{kind} `{ref.name}`{extra}; {at}; used {uses} times", ref.span)
        if isa is None or not (0 <= line < len(lines)):
            return None
        tok = ptx_index.token_at(lines[line], col)
        if tok is None:
            return None
        text = isa.hover_markdown(tok[0])
        if not text:
            return None
        span = Span(ptx_index.position(line, tok[1]), ptx_index.position(line, tok[2]))
        return _markdown(text, span)

    server.hover_providers.append(hover)

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=["%", "."])
    )
    def completion(ls: PtxlsServer, params: types.CompletionParams) -> types.CompletionList:
        got = cache.get(ls, params.text_document.uri)
        items: list[types.CompletionItem] = []
        if got is None:
            return types.CompletionList(is_incomplete=False, items=items)
        module, lines = got
        line = lines[params.position.line] if params.position.line < len(lines) else ""
        before = line[: params.position.character]
        word = before.split()[-1] if before.split() else ""
        func = module.function_at(params.position.line)
        if not word.startswith((".", "%")):  # other features' items (the kernel library)
            for provider in getattr(ls, "completion_providers", []):
                items += provider(ls, "\n".join(lines), func is not None)
        if word.lstrip("[{@!").startswith("%"):
            names: set[str] = set()
            if func:
                for d in func.decls:
                    if d.count is None:
                        names.add(d.name)
                    else:
                        names.update(f"{d.name}{i}" for i in range(min(d.count, 64)))
            for n in sorted(names):
                items.append(types.CompletionItem(label=n, kind=types.CompletionItemKind.Variable))
            if isa is not None:
                for n in isa.special_register_names():
                    items.append(
                        types.CompletionItem(label=n, kind=types.CompletionItemKind.Constant)
                    )
        elif isa is not None and word.startswith("."):
            for n in isa.directive_names():
                items.append(types.CompletionItem(label=n, kind=types.CompletionItemKind.Keyword))
        elif isa is not None and "." in word:  # a modifier after an opcode: ld.glo|
            for n in isa.modifier_names():
                items.append(
                    types.CompletionItem(
                        label=n.lstrip("."), kind=types.CompletionItemKind.EnumMember
                    )
                )
        else:
            if isa is not None:
                for n in isa.opcode_names():
                    items.append(
                        types.CompletionItem(label=n, kind=types.CompletionItemKind.Function)
                    )
            if func:
                for n in func.labels:
                    items.append(
                        types.CompletionItem(label=n, kind=types.CompletionItemKind.Reference)
                    )
        return types.CompletionList(is_incomplete=False, items=items)


def _usage_hover(ls: PtxlsServer, uri: str, ref) -> types.Hover | None:  # noqa: ANN001
    """ptxas -v of the entry under the cursor, from the last clean check of this version."""
    doc = ls.open_document(uri)
    version, usage = getattr(ls, "ptx_usage", {}).get(uri, (None, []))
    mine = [u for u in usage if u.name == ref.name]
    if not mine:
        return None
    text = resources.format_usage_markdown(mine[0])
    if doc is None or doc.version != version:
        text = "_from the last version ptxas assembled cleanly_\n\n" + text
    return _markdown(text, ref.span)


def _markdown(text: str, span: Span) -> types.Hover:
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text), range=_range(span)
    )
