"""``python -m ptxls.server [serve] [--stdio] [-v]``: the language server over stdio.

Editors start this form (the VS Code client's default); ``ptxls serve`` from the CLI does the
same. The other commands live in ``ptxls.cli`` (``ptxls`` or ``python -m ptxls.cli``).
"""

import argparse
import sys

from .app import run_server

parser = argparse.ArgumentParser(prog="python -m ptxls.server", description=__doc__)
parser.add_argument("command", nargs="?", choices=["serve"], default="serve")
parser.add_argument("--stdio", action="store_true", help="accepted; stdio is the only transport")
parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
sys.exit(run_server(parser.parse_args().verbose))
