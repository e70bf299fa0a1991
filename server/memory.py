"""The server's memory given back: glibc's allocator set for a long session of large strings.

A soak of five minutes (bench/soak_server.py: documents of 3-10 MB opened and closed, bursts
of didOpen, 300 KB completion lists) left the server at a 385 MB median resident size, while
the Python heap it held 30 s into a soak was 14 MB (tracemalloc). The rest was memory glibc
kept after Python freed it: its mmap threshold rises to the largest block ever freed (up to
32 MB), so after the first large document every later text, body and reply of a few MB came
from the heap, where a freed block in the middle stays resident; and each thread that
allocates gets an arena of its own (up to 8 per core), each keeping its own freed memory.

So at start-up (``tune_allocator``, Linux with glibc only; elsewhere nothing changes): blocks
from 256 KB up are mapped and unmapped on their own (a fixed threshold also stops the rise),
two arenas at most, and the heap's top is returned above 1 MB free. While serving,
``release_periodically`` asks glibc every few seconds to return the free pages in the middle of
its heaps (``malloc_trim``), in a worker thread (ctypes drops the GIL for the call), so the
event loop is never held by it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
import sys
import threading

log = logging.getLogger("ptxls.memory")

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
MMAP_THRESHOLD = 256 << 10
TRIM_THRESHOLD = 1 << 20
ARENA_MAX = 2
RELEASE_EVERY_S = 5.0

_libc: ctypes.CDLL | None = None
_tried = False


def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (mallopt and malloc_trim exist), else None."""
    global _libc, _tried
    if _tried:
        return _libc
    _tried = True
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.gnu_get_libc_version  # noqa: B018 - raises AttributeError where it is not glibc
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    _libc = libc
    return libc


def tune_allocator() -> bool:
    """Set glibc's thresholds and arena count (see the module's text). False where not glibc."""
    libc = _glibc()
    if libc is None:
        return False
    ok = all(
        libc.mallopt(option, value) == 1
        for option, value in (
            (M_MMAP_THRESHOLD, MMAP_THRESHOLD),
            (M_TRIM_THRESHOLD, TRIM_THRESHOLD),
            (M_ARENA_MAX, ARENA_MAX),
        )
    )
    if not ok:
        log.info("mallopt refused a setting; the allocator keeps its defaults there")
    return ok


_trimming = threading.Lock()


def release() -> None:
    """Return glibc's free pages to the system (a no-op where not glibc; never two at once)."""
    libc = _glibc()
    if libc is None or not _trimming.acquire(blocking=False):
        return
    try:
        libc.malloc_trim(0)
    finally:
        _trimming.release()


async def release_periodically(every_s: float = RELEASE_EVERY_S) -> None:
    """``release`` every ``every_s`` seconds in a worker thread, until cancelled."""
    if _glibc() is None:
        return
    while True:
        await asyncio.sleep(every_s)
        with contextlib.suppress(RuntimeError):  # the executor is shutting down
            await asyncio.to_thread(release)
