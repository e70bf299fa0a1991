"""Test-suite wiring: tests/ on sys.path for the shared helpers (lsp_helpers.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lsp_helpers import *  # noqa: E402,F403 — older tests import the helpers from conftest
