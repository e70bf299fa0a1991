"""Documents too large for the full analysis: they get a linear header check and a notice, and
every other request on them is answered at once with no result.

A 100 MB single-line didOpen used to stall every hover for 10.5 s (1.3 GB resident), a
1M-line file 1.6 s, a 32 MB JSON array 1.4 s: parsing, lints and ptxas's output ran over the
whole text, in threads that hold the GIL as much as the loop. Above ``MAX_DOCUMENT_BYTES`` the
server runs nothing over a text; one that *arrives* above it (a didOpen, a whole-text change)
is not even built: the transport reads the message as a stream and keeps the text's first
``HEADER_BYTES`` and its size (``framing.read_streamed``; a 100 MB string cost the loop
0.3-1 s in copies alone), drops ranged edits to it, and refuses commands on it. The
document lifecycle (``features/ptx_diagnostics.py``) publishes one information diagnostic that
says why, with the PTX header read from the first ``HEADER_BYTES`` (the one linear check), and
the transport (``transport.py``) answers every ``textDocument/*`` request on it with ``null``,
which LSP allows for each of them. ``ptxls check FILE`` in a terminal checks such a file in full.
"""

from __future__ import annotations

from lsprotocol import types

from ptxls.frontend.languages import PTX, language_of
from ptxls.frontend.ptx import scan_header

from .uris import canonical

# Where navigation gives way to staying responsive. A generated library of a few thousand
# kernels is 3-5 MB, and hover, definition and outline on it are what people open it for (its
# parse runs off the loop: tests/test_large_ptx_navigation.py); a realistic 2.4 MB file costs
# other requests ~200 ms of waiting while it is analysed on a 2-core machine, so 8 MB bounds
# that wait to well under a second. Above it, a file is not something one edits by hand.
MAX_DOCUMENT_BYTES = 8_000_000
HEADER_BYTES = 64 << 10
PRODUCER = "large-document"


def size_if_too_large(ls, uri: str) -> int | None:
    """The document's length when it is above the limit, else None (also when not open). A text
    that arrived above the limit was cut to its first HEADER_BYTES by the transport, which
    keeps its size as sent (``cut_documents``; building a 100 MB string stalled the loop)."""
    doc = ls.open_document(uri)
    if doc is None:
        return None
    cut = getattr(ls, "cut_documents", None)
    if cut and canonical(doc.uri) in cut:
        return int(cut[canonical(doc.uri)])
    size = len(doc.source)
    return size if size > MAX_DOCUMENT_BYTES else None


def notice(ls, uri: str, size: int) -> None:
    """Replace the document's diagnostics by the one that says why there are no others."""
    doc = ls.open_document(uri)
    if doc is None:
        return
    version, target = scan_header(doc.source[:HEADER_BYTES])
    header = (
        f" Its header: .version {'.'.join(map(str, version))}, .target {target}."
        if version and target
        else " No .version/.target in its first 64 KB."
        if language_of(uri) == PTX
        else ""
    )
    message = (
        f"ptxls: this file is {size / 1e6:.1f} MB, above the {MAX_DOCUMENT_BYTES / 1e6:.0f} MB "
        "a server analyses as you type: no diagnostics, hovers, lenses or navigation for it "
        f"(run 'ptxls check {uri.rsplit('/', 1)[-1][:80]}' in a terminal).{header}"
    )
    diagnostic = types.Diagnostic(
        range=types.Range(types.Position(0, 0), types.Position(0, 0)),
        message=message,
        severity=types.DiagnosticSeverity.Information,
        source="ptxls",
    )
    ls.store.clear(uri)
    ls.store.set(uri, PRODUCER, [diagnostic])
    ls.publish(uri, doc.version)
    ls.tell_once("large-document", message, types.MessageType.Info)


def request_uri(data: dict) -> str | None:
    """The document a ``textDocument/*`` request is about, from its raw params."""
    params = data.get("params")
    doc = params.get("textDocument") if isinstance(params, dict) else None
    uri = doc.get("uri") if isinstance(doc, dict) else None
    return uri if isinstance(uri, str) else None
