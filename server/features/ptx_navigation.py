"""Reading PTX: outline, go to definition, references, hover and completion for .ptx buffers."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from ptxls.diagnostics import isa, resources
from ptxls.diagnostics.engine import split_lines
from ptxls.frontend import ptx_index
from ptxls.frontend.ptx import PtxFunction, PtxModule, parse_ptx

from .. import convert
from ..app import PtxlsServer
from ..convert import Completion
from .languages import PTX, language_of
from .ptx_diagnostics import PtxCheckState


class ParseCache:
    """One parse per (uri, version): hover, definition and outline on the same version share it.
    The feature's state (``ls.state(ParseCache)``).

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


def symbols(ls: PtxlsServer, params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
    got = ls.state(ParseCache).get(ls, params.text_document.uri)
    return [convert.document_symbol(i) for i in ptx_index.outline(got[0])] if got else []


def definition(ls: PtxlsServer, params: types.DefinitionParams) -> types.Location | None:
    got = ls.state(ParseCache).get(ls, params.text_document.uri)
    if got is None:
        return None
    ref = ptx_index.name_at(got[0], params.position.line, params.position.character)
    span = ptx_index.definition(ref, got[0]) if ref else None
    return convert.location(params.text_document.uri, span) if span else None


def references(ls: PtxlsServer, params: types.ReferenceParams) -> list[types.Location]:
    got = ls.state(ParseCache).get(ls, params.text_document.uri)
    if got is None:
        return []
    ref = ptx_index.name_at(got[0], params.position.line, params.position.character)
    if ref is None:
        return []
    spans = ptx_index.references(ref, got[0], params.context.include_declaration)
    return [convert.location(params.text_document.uri, s) for s in spans]


def hover(ls: PtxlsServer, params: types.HoverParams) -> types.Hover | None:
    got = ls.state(ParseCache).get(ls, params.text_document.uri)
    if got is None:
        return None
    module, lines = got
    line, col = params.position.line, params.position.character
    ref = ptx_index.name_at(module, line, col)
    if ref is not None and ref.kind == "function":
        return _function_hover(ls, params.text_document.uri, ref, module)
    if ref is not None and ref.kind == "register":
        return convert.markdown_hover(ptx_index.describe_register(ref, module), ref.span)
    if ref is not None and ref.kind in ("label", "param"):
        return convert.markdown_hover(_describe_name(ref, module), ref.span)
    if not (0 <= line < len(lines)):
        return None
    tok = ptx_index.token_at(lines[line], col)
    text = isa.hover_markdown(tok[0]) if tok else None
    if not text or tok is None:
        return None
    return convert.markdown_hover(text, convert.line_range(line, tok[1], tok[2]))


def _describe_name(ref, module: PtxModule) -> str:
    """'label `$L1`; defined on line 4; used 2 times' (or a kernel parameter with its type)."""
    uses = len(ptx_index.references(ref, module, include_declaration=False))
    where = ptx_index.definition(ref, module)
    at = f"defined on line {where.start.line + 1}" if where else "not defined"
    kind = "label" if ref.kind == "label" else "kernel parameter"
    extra = ""
    if ref.kind == "param" and ref.function:
        for i, p in enumerate(ref.function.params):
            if p.name == ref.name:
                extra = f" — `{p.type}`, parameter {i + 1} of `{ref.function.name}`"
    return f"{kind} `{ref.name}`{extra}; {at}; {ptx_index.used_times(uses)}"


def completion(ls: PtxlsServer, params: types.CompletionParams) -> types.CompletionList:
    got = ls.state(ParseCache).get(ls, params.text_document.uri)
    if got is None:
        return convert.completion_list([])
    module, lines = got
    line = lines[params.position.line] if params.position.line < len(lines) else ""
    before = line[: params.position.character]
    word = before.split()[-1] if before.split() else ""
    func = module.function_at(params.position.line)
    items: list[Completion] = []
    if not word.startswith((".", "%")):  # other features' items (the kernel library)
        for provider in ls.completion_providers:
            items += provider(ls, "\n".join(lines), func is not None)
    return convert.completion_list(
        items + _words(word, func), ls.client_reads_markdown("completion")
    )


def _words(word: str, func: PtxFunction | None) -> list[Completion]:
    """What may come at ``word``: registers after %, directives after ., modifiers after an
    opcode's dot, else opcodes and the function's labels."""
    if word.lstrip("[{@!").startswith("%"):
        names: set[str] = set()
        for d in func.decls if func else []:
            if d.count is None:
                names.add(d.name)
            else:
                names.update(f"{d.name}{i}" for i in range(min(d.count, 64)))
        return [Completion(n, "register") for n in sorted(names)] + [
            Completion(n, "special-register") for n in isa.special_register_names()
        ]
    if word.startswith("."):
        return [Completion(n, "directive") for n in isa.directive_names()]
    if "." in word:  # a modifier after an opcode: ld.glo|
        return [Completion(n.lstrip("."), "modifier") for n in isa.modifier_names()]
    labels = [Completion(n, "label") for n in func.labels] if func else []
    return [Completion(n, "opcode") for n in isa.opcode_names()] + labels


def _function_hover(ls: PtxlsServer, uri: str, ref, module: PtxModule) -> types.Hover:
    """What is known of the function under the cursor: its signature always, and ptxas -v's
    resources from the last clean check (or why there are none yet). The last GPU test's
    result joins it from gputest_feature's hover."""
    func = next((f for f in module.functions if f.name == ref.name), None)
    parts = [_signature(func)] if func is not None else [f"function `{ref.name}`"]
    doc = ls.open_document(uri)
    version, usage = ls.state(PtxCheckState).usage.get(uri, (None, []))
    mine = [u for u in usage if u.name == ref.name]
    if mine:
        if doc is None or doc.version != version:
            parts.append("_resources from the last version ptxas assembled cleanly:_")
        parts.append(resources.format_usage_markdown(mine[0]))
    elif func is not None and func.body is not None:
        parts.append(_why_no_resources(ls, uri))
    return convert.markdown_hover("\n\n".join(parts), ref.span)


def _signature(func) -> str:  # a PtxFunction
    kind = ".entry" if func.is_entry else ".func"
    params = ",\n".join(f"    .param {p.type} {p.name}{p.array}" for p in func.params)
    body = f"(\n{params}\n)" if params else "()"
    return f"```ptx\n{kind} {func.name}{body}\n```"


def _why_no_resources(ls: PtxlsServer, uri: str) -> str:
    errors = sum(1 for d in ls.store.all(uri) if d.severity == types.DiagnosticSeverity.Error)
    if errors:
        what = "an error" if errors == 1 else f"{errors} errors"
        return (
            f"_Registers, shared memory and occupancy: not known while ptxas reports {what} "
            "in this file (the Problems list); they show once it assembles cleanly._"
        )
    return "_Registers, shared memory and occupancy: ptxas has not finished this version yet._"


def on_close(ls: PtxlsServer, params) -> None:
    ls.state(ParseCache).drop(params.text_document.uri)


COMPLETION_OPTIONS = types.CompletionOptions(trigger_characters=["%", "."])


def register(server: PtxlsServer) -> None:
    server.did_close_hooks.append(on_close)
    server.hover_providers.append(hover)
    server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)(symbols)
    server.feature(types.TEXT_DOCUMENT_DEFINITION)(definition)
    server.feature(types.TEXT_DOCUMENT_REFERENCES)(references)
    server.feature(types.TEXT_DOCUMENT_COMPLETION, COMPLETION_OPTIONS)(completion)
