"""Loops that live as long as a ``with`` block: a front end's and a worker's background work.

The partition watch, the logout listing, the payload sweep and the open-task
count each run forever beside the server; each must end with the lifespan
that started it, awaited, so nothing of it outlives its Temporal client.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any


@contextlib.asynccontextmanager
async def running(*loops: Coroutine[Any, Any, None]) -> AsyncIterator[None]:
    """While inside, each of ``loops`` runs as a task; on the way out each is cancelled
    and awaited (all cancelled first, so none waits on another's end)."""
    tasks = [asyncio.create_task(loop) for loop in loops]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
