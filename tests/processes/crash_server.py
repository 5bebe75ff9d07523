"""A server whose task body records every run in a directory and then waits.

Used by the crash test: the first worker process is killed mid-leg; whether a
leg "finishes" is decided by the ``release`` file the test writes.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

from fastmcp import Context, FastMCP

mcp = FastMCP("crash")


@mcp.tool(task=True)
async def record_and_wait(marker_dir: str, ctx: Context) -> str:
    runs = Path(marker_dir)
    (runs / f"run-{os.getpid()}-{uuid.uuid4().hex}").write_text(ctx.task_id or "")
    while not (runs / "release").exists():
        await asyncio.sleep(0.05)
    return f"finished in {os.getpid()}"
