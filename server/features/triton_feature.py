"""Code actions on an ``@triton.jit`` function in a Python file:

- "Lower to PTX with Triton (reference) (K)": ``ptxls.lowerToPtx (uri, K, "triton", line)``,
  Triton's own PTX for the kernel, written like the nvcc reference (lowering_feature runs it);
- "Show PTX for this kernel (K)": ``ptxls.showPtx (uri, K)``, Triton's PTX with the Python
  lines interleaved (show_ptx runs it).

Both compile in a separate process from the kernel's own source, never running the file
(``toolchain/triton_compile.py``). Offering them is only an ``ast`` read of the buffer.
"""

from __future__ import annotations

from lsprotocol import types

from ptxls.frontend.triton import read_triton

from .. import convert
from ..app import PtxlsServer
from .languages import PYTHON, language_of

LOWER_COMMAND = "ptxls.lowerToPtx"
SHOW_COMMAND = "ptxls.showPtx"


def code_actions(ls: PtxlsServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    doc = ls.open_document(uri)
    if doc is None or language_of(uri, getattr(doc, "language_id", None)) != PYTHON:
        return []
    line = params.range.start.line
    actions = []
    for k in read_triton(doc.source).kernels:
        if k.nested or not k.contains(line):
            continue
        actions.append(
            convert.code_action(
                f"Lower to PTX with Triton (reference) ({k.name})",
                LOWER_COMMAND,
                [uri, k.name, "triton", line],
            )
        )
        actions.append(
            convert.code_action(
                f"Show PTX for this kernel ({k.name})", SHOW_COMMAND, [uri, k.name], "source"
            )
        )
    return actions


def register(server: PtxlsServer) -> None:
    server.code_action_providers.append(code_actions)
