"""Reading a file a command names that the editor has not opened (Show PTX, Show SASS, a
lowering of a file on disk, a plan): off the event loop, and only a regular file of a bounded
size (``toolchain/safe_read.py``: ``Path.read_text`` on the loop froze the server for good on a
FIFO in the workspace and until MemoryError on ``file:///dev/zero``).
"""

from __future__ import annotations

import asyncio
import os

from ptxls.toolchain.safe_read import UnreadableFile, read_regular_file

MAX_COMMAND_FILE_BYTES = 32 << 20  # a CUDA, Triton or PTX source; a 100 MB file is not one

__all__ = ["MAX_COMMAND_FILE_BYTES", "UnreadableFile", "read_user_file"]


async def read_user_file(path: str | os.PathLike, limit: int = MAX_COMMAND_FILE_BYTES) -> str:
    """``read_regular_file`` in a worker thread: the event loop never waits on the disk."""
    return await asyncio.to_thread(read_regular_file, path, limit)
