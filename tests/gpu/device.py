"""Whether a CUDA device is here, asked once for all GPU-marked tests (each ask starts a worker)."""

from __future__ import annotations

import asyncio

from ptxls.gputest.api import gpu_available
from ptxls.gputest.supervisor import Supervisor
from ptxls.toolchain.discovery import ToolNotFound


def _probe() -> tuple[bool, str]:
    async def ask():
        sup = Supervisor()
        try:
            return await gpu_available(sup)
        finally:
            await sup.close()

    return asyncio.run(ask())


HAVE_GPU, WHY = _probe()


def missing_tool(find) -> str:
    """Why ``find()`` (a toolchain finder: find_sanitizer, find_nvcc) finds nothing; "" if found."""
    try:
        find()
    except ToolNotFound as e:
        return str(e)
    return ""
