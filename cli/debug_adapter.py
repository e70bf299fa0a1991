"""``ptxls debug-adapter``: the Debug Adapter Protocol over stdin/stdout, debugging a kernel's
PTX on the CPU emulator (debugger/README.md). Editors start it as their debug adapter; stdout
carries only protocol messages."""

from __future__ import annotations

import argparse
import sys
from typing import BinaryIO, cast


def add_parser(subparsers) -> None:
    subparsers.add_parser(
        "debug-adapter",
        help="Debug Adapter Protocol server on stdio: step a kernel's PTX on the CPU emulator",
        description="Speaks DAP on stdin/stdout (launch: program, kernel, n, seed, block, "
        "thread). Started by an editor's debugger, not by hand.",
    )


def run(args: argparse.Namespace) -> int:
    from ptxls.debugger.adapter import Adapter
    from ptxls.debugger.protocol import Channel

    # The protocol needs the raw byte stream (Content-Length counts bytes); the CLI's text
    # stdout wrapper scrubs secrets from log text, and nothing the adapter writes carries one
    # (PTX lines, register values, paths).
    raw = getattr(sys.stdout, "buffer", None) or getattr(sys.__stdout__, "buffer", None)
    out = cast(BinaryIO, raw)
    return Adapter(Channel(sys.stdin.buffer, out)).serve()
