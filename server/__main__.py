"""``python -m ptxls.server [serve] [--stdio] [-v]``: the language server over stdio.

Editors start this form (the VS Code client's default); ``ptxls serve`` from the CLI does the
same. The other commands live in ``ptxls.cli`` (``ptxls`` or ``python -m ptxls.cli``).
"""

import sys

# `python -m` put the folder it was started in first on sys.path: in a cloned repository that
# would import its numpy.py, numpy/ or cuda/ in place of the installed ones. Drop it before any
# other import. (A `ptxls/` there is imported by Python before this line runs: start the server
# outside the project — the VS Code extension does — or as `ptxls serve` / `python -P -m ...`.)
if sys.path and not sys.flags.safe_path and sys.path[0] in ("", __import__("os").getcwd()):
    del sys.path[0]

import argparse

from .app import run_server

parser = argparse.ArgumentParser(prog="python -m ptxls.server", description=__doc__)
parser.add_argument("command", nargs="?", choices=["serve"], default="serve")
parser.add_argument("--stdio", action="store_true", help="accepted; stdio is the only transport")
parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
sys.exit(run_server(parser.parse_args().verbose))
