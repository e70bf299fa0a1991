"""Test-suite wiring: tests/ on sys.path for the shared helpers (lsp_helpers.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

try:  # older tests import the LSP helpers from conftest; the GPU machine has no pytest-lsp
    from lsp_helpers import *  # noqa: E402,F403
except ImportError:
    pass
