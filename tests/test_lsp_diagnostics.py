"""End-to-end: the real server process, a real LSP client, real ptxas."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import (
    BROKEN,
    EXAMPLES,
    FIXED,
    SHARED_SERVER,
    open_doc,
    replace_all,
    wait_for_publish,
)

pytestmark = [pytest.mark.lsp(options={"debounceMs": 50}), *SHARED_SERVER]


@pytest.fixture
def client(shared_client: LanguageClient) -> LanguageClient:
    """One server for the module: each test opens documents of its own (its tmp_path's uris)
    and leaves the settings and the server's life alone."""
    return shared_client


def _by_source(params, source):
    return [d for d in params.diagnostics if d.source == source]


async def test_broken_file_gets_ptxas_diagnostic_on_the_token(client: LanguageClient, tmp_path):
    uri = (tmp_path / "broken.ptx").as_uri()
    open_doc(client, uri, BROKEN)
    pub = await wait_for_publish(client, uri, lambda p: _by_source(p, "ptxas"))
    assert pub.version == 1
    unknown = [d for d in pub.diagnostics if "%r6" in d.message]
    assert unknown, pub.diagnostics
    lines = BROKEN.splitlines()
    for d in unknown:
        line = lines[d.range.start.line]
        # the range covers exactly the token the message names
        assert line[d.range.start.character : d.range.end.character] == "%r6"
        assert d.severity == types.DiagnosticSeverity.Error


async def test_fixing_the_file_clears_the_diagnostics(client: LanguageClient, tmp_path):
    uri = (tmp_path / "broken.ptx").as_uri()
    open_doc(client, uri, BROKEN)
    await wait_for_publish(client, uri, lambda p: p.diagnostics)
    replace_all(client, uri, FIXED, 2)
    pub = await wait_for_publish(client, uri, lambda p: p.version == 2 and not p.diagnostics)
    assert list(pub.diagnostics) == []


async def test_burst_of_edits_publishes_only_the_last_version(client: LanguageClient, tmp_path):
    uri = (tmp_path / "burst.ptx").as_uri()
    open_doc(client, uri, BROKEN)
    await wait_for_publish(client, uri, lambda p: p.version == 1)
    # 30 edits, alternating broken and fixed text, ending on the broken one (version 31).
    for v in range(2, 32):
        replace_all(client, uri, BROKEN if v % 2 else FIXED, v)
        await asyncio.sleep(0.005)
    last = await wait_for_publish(client, uri, lambda p: p.version == 31 and _by_source(p, "ptxas"))
    assert any("%r6" in d.message for d in last.diagnostics)
    # Nothing for an older version may follow the last version's publish.
    await asyncio.sleep(1.0)
    after = client.publishes[client.publishes.index(last) :]
    assert all(p.version == 31 for p in after if p.uri == uri), [p.version for p in after]
    # Every publish carries a version, and versions never go backwards.
    versions = [p.version for p in client.publishes if p.uri == uri]
    assert None not in versions
    assert versions == sorted(versions)


async def test_close_clears_diagnostics(client: LanguageClient, tmp_path):
    uri = (tmp_path / "broken.ptx").as_uri()
    open_doc(client, uri, BROKEN)
    await wait_for_publish(client, uri, lambda p: p.diagnostics)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for_publish(client, uri, lambda p: not p.diagnostics)


async def test_instant_lints_for_undeclared_register_and_unknown_label(
    client: LanguageClient, tmp_path
):
    uri = (tmp_path / "lint.ptx").as_uri()
    text = FIXED.replace("@%p1 bra        DONE;", "@%p1 bra        FINISH;")
    open_doc(client, uri, text)
    pub = await wait_for_publish(client, uri, lambda p: p.diagnostics)
    assert any("FINISH" in d.message for d in pub.diagnostics)


async def test_cuda_file_gets_nvcc_diagnostics_on_the_right_line(client: LanguageClient, tmp_path):
    src = (
        (EXAMPLES / "vec_add.cu")
        .read_text()
        .replace("c[i] = a[i] + b[i];", "c[i] = a[i] + b[i] + bias;")
    )
    path = tmp_path / "vec_add.cu"
    path.write_text(src)
    open_doc(client, path.as_uri(), src, language="cuda-cpp")
    pub = await wait_for_publish(client, path.as_uri(), lambda p: p.diagnostics, timeout=60)
    d = pub.diagnostics[0]
    assert "bias" in d.message and d.source in ("nvcc", "nvrtc")
    line = src.splitlines()[d.range.start.line]
    assert line[d.range.start.character : d.range.end.character] == "bias"


@pytest.mark.parametrize(
    "text, expect",
    [
        ("", ".version"),  # empty: ptxas wants a .version, and so do we
        ("\x00\x01\x02ELF garbage \xff", "not PTX text"),
        (FIXED.replace("\n", "\r\n"), None),  # CRLF is fine
        (FIXED.replace("    ", "\t"), None),  # tabs are fine
    ],
    ids=["empty", "binary", "crlf", "tabs"],
)
async def test_bad_input_gets_a_clear_answer_and_the_server_stays_up(
    client: LanguageClient, tmp_path, text, expect
):
    uri = (tmp_path / "odd.ptx").as_uri()
    open_doc(client, uri, text)
    pub = await wait_for_publish(client, uri)
    if expect is None:
        assert [d for d in pub.diagnostics if d.severity == types.DiagnosticSeverity.Error] == []
    else:
        assert expect in pub.diagnostics[0].message, pub.diagnostics
        assert "/tmp/ptxls-" not in pub.diagnostics[0].message  # our temp copy never shows
    # still alive and answering
    uri2 = (tmp_path / "after.ptx").as_uri()
    open_doc(client, uri2, BROKEN)
    await wait_for_publish(client, uri2, lambda p: _by_source(p, "ptxas"))


async def test_crlf_diagnostics_land_on_the_right_line(client: LanguageClient, tmp_path):
    uri = (tmp_path / "crlf.ptx").as_uri()
    text = BROKEN.replace("\n", "\r\n")
    open_doc(client, uri, text)
    pub = await wait_for_publish(client, uri, lambda p: _by_source(p, "ptxas"))
    lines = BROKEN.splitlines()
    for d in pub.diagnostics:
        if "%r6" in d.message:
            assert (
                lines[d.range.start.line][d.range.start.character : d.range.end.character] == "%r6"
            )


async def test_one_squiggle_per_cause_with_a_quick_fix_that_declares_the_register(
    client: LanguageClient, tmp_path
):
    uri = (tmp_path / "broken.ptx").as_uri()
    open_doc(client, uri, BROKEN)
    pub = await wait_for_publish(client, uri, lambda p: _by_source(p, "ptxas"))
    errors = [d for d in pub.diagnostics if d.severity == types.DiagnosticSeverity.Error]
    # ptxas says "Unknown symbol" and "Arguments mismatch" on each of the three lines: one each
    assert sorted(d.range.start.line for d in errors) == [27, 28, 33], errors
    assert not any(d.message.startswith("Arguments mismatch") for d in errors)
    assert all("'.reg .b32 %r<6>' on line 16" in d.message for d in errors)

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=errors[0].range,
            context=types.CodeActionContext(diagnostics=errors),
        )
    )
    fixes = [
        a
        for a in actions or []
        if isinstance(a, types.CodeAction) and a.kind == types.CodeActionKind.QuickFix
    ]
    assert [a.title for a in fixes] == ["Declare %r<7> on line 16 (covers %r6)"]
    (edit,) = fixes[0].edit.changes[uri]
    lines = BROKEN.splitlines()
    line = lines[edit.range.start.line]
    fixed_line = (
        line[: edit.range.start.character] + edit.new_text + line[edit.range.end.character :]
    )
    assert fixed_line == FIXED.splitlines()[edit.range.start.line]

    # applied, the file checks clean
    replace_all(client, uri, FIXED, 2)
    await wait_for_publish(client, uri, lambda p: p.version == 2 and not p.diagnostics)


async def test_a_quick_fix_is_not_offered_once_the_text_it_replaces_changed(
    client: LanguageClient, tmp_path
):
    uri = (tmp_path / "broken.ptx").as_uri()
    open_doc(client, uri, BROKEN)
    pub = await wait_for_publish(client, uri, lambda p: _by_source(p, "ptxas"))
    stale = list(pub.diagnostics)
    # the person widened the range by hand meanwhile; the editor still holds the old squiggles
    replace_all(client, uri, BROKEN.replace("%r<6>;", "%r<9>;"), 2)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=stale[0].range,
            context=types.CodeActionContext(diagnostics=stale),
        )
    )
    assert not [
        a
        for a in actions or []
        if isinstance(a, types.CodeAction) and a.kind == types.CodeActionKind.QuickFix
    ]
