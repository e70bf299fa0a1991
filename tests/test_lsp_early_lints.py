"""A large .ptx's instant lints, started as each edit arrives (in the debounce): what is
published for a version is always that version's text's, the lints come first and ptxas's
publish replaces them, and nothing older follows the last version's publish."""

from __future__ import annotations

import asyncio

import pytest
from pytest_lsp import LanguageClient

from lsp_helpers import FIXED, SHARED_SERVER, open_doc, replace_all, wait_for_publish

pytestmark = [pytest.mark.lsp(options={"debounceMs": 50}), *SHARED_SERVER]

DECLS = ".reg .b64   %rd<8>;\n"
# well over the engine's INLINE_LINT_BYTES (50 KB): the lints run in a worker thread, early
PADDING = "".join(f"// padding line {i} {'x' * 90}\n" for i in range(700))


def text_of(version: int) -> str:
    """FIXED with one undeclared register named after the version, and a large comment."""
    assert DECLS in FIXED
    body = FIXED.replace(DECLS, f"{DECLS}    mov.u32 %bad{version}, 0;\n", 1)
    return PADDING + body


def _bad_names(params) -> set[str]:
    return {w.strip("'.,;") for d in params.diagnostics for w in d.message.split()
            if w.strip("'.,;").startswith("%bad")}  # fmt: skip


async def test_each_publish_is_its_own_versions_and_the_lints_come_first(shared_client, tmp_path):
    client: LanguageClient = shared_client
    uri = (tmp_path / "large.ptx").as_uri()
    assert len(text_of(1)) > 60_000
    open_doc(client, uri, text_of(1))
    await wait_for_publish(client, uri, lambda p: p.version == 1 and _by_ptxas(p))
    # a burst: each edit arrives while the previous one's early lints may still be running
    last = 12
    for v in range(2, last + 1):
        replace_all(client, uri, text_of(v), v)
        await asyncio.sleep(0.02 if v % 3 else 0.12)
    final = await wait_for_publish(client, uri, lambda p: p.version == last and _by_ptxas(p))
    await asyncio.sleep(1.0)
    mine = [p for p in client.publishes if p.uri == uri]
    for p in mine:  # a stale text's lints are never published under a newer version
        assert _bad_names(p) <= {f"%bad{p.version}"}, (p.version, _bad_names(p))
    assert _bad_names(final) == {f"%bad{last}"}
    versions = [p.version for p in mine]
    assert None not in versions and versions == sorted(versions)
    assert mine[-1] is final  # nothing after ptxas's publish of the last version
    # the last version: the lints alone first, then ptxas's publish (which replaces them)
    of_last = [p for p in mine if p.version == last]
    assert not _by_ptxas(of_last[0]) and _bad_names(of_last[0]) == {f"%bad{last}"}
    assert len(of_last) == 2


def _by_ptxas(params) -> bool:
    return any(d.source == "ptxas" for d in params.diagnostics)


async def test_early_lints_are_taken_only_for_their_own_version_and_text():
    """The guard at the debounce's end: another version's or another text's run is not used,
    and a run taken once is not taken again."""
    from ptxls.server.features import ptx_diagnostics as pd

    class Server:  # the one thing _take_early_lints asks of the server
        def __init__(self) -> None:
            self.checks = pd.PtxCheckState()

        def state(self, _cls):
            return self.checks

    ls = Server()
    job = asyncio.get_running_loop().create_future()
    text = text_of(3)
    ls.checks.early["u"] = pd._EarlyLints(3, text, job)
    assert pd._take_early_lints(ls, "u", 2, text) is None  # an older version
    assert pd._take_early_lints(ls, "u", 3, text_of(4)) is None  # another text
    assert pd._take_early_lints(ls, "v", 3, text) is None  # another document
    assert pd._take_early_lints(ls, "u", 3, "".join(text)) is job  # equal text, not only `is`
    assert pd._take_early_lints(ls, "u", 3, text) is None  # taken: never used twice


async def test_one_early_run_per_document_and_a_superseded_one_never_starts():
    from types import SimpleNamespace

    from ptxls.server.features import ptx_diagnostics as pd

    class Server:
        def __init__(self) -> None:
            self.checks = pd.PtxCheckState()
            self.doc = SimpleNamespace(version=1, source=text_of(1), language_id="ptx")

        def state(self, _cls):
            return self.checks

        def open_document(self, _uri):
            return self.doc

    ls = Server()
    uri = "file:///x/large.ptx"
    pd._start_early_lints(ls, uri)
    first = ls.checks.early[uri]
    assert first.job is not None and ls.checks.early_running[uri] is first.job
    ls.doc = SimpleNamespace(version=2, source=text_of(2), language_id="ptx")
    pd._start_early_lints(ls, uri)
    second = ls.checks.early[uri]
    ls.doc = SimpleNamespace(version=3, source=text_of(3), language_id="ptx")
    pd._start_early_lints(ls, uri)
    third = ls.checks.early[uri]
    assert second.job is None and third.job is None  # waiting: one thread at a time
    await first.job
    await asyncio.sleep(0)  # the done callback
    assert second.job is None  # superseded before it started: never started
    assert third.job is not None and ls.checks.early_running[uri] is third.job
    _, problems = await third.job
    assert {p.message.split("'")[1] for p in problems if p.code == "undeclared-register"} == {
        "%bad3"
    }
