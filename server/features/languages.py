"""Which checker a document gets, by language id or, failing that, by file extension: the
table is frontend/languages.py's, shared with the CLI."""

from __future__ import annotations

from ptxls.frontend.languages import CUDA, PTX, PYTHON, language_of

__all__ = ["CUDA", "PTX", "PYTHON", "language_of"]
