"""Test-suite wiring: tests/ on sys.path for the shared helpers (lsp_helpers.py)."""

import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Older tests import the LSP helpers from conftest; the GPU machine has no pytest-lsp.
with contextlib.suppress(ImportError):
    from lsp_helpers import *  # noqa: E402,F403
