"""A server whose task body records every run in a directory and then waits.

Used by the crash test: the first worker process is killed mid-leg; whether a
leg "finishes" is decided by the ``release`` file the test writes. Each run
leaves ``run-<pid>-<id>`` when it starts and ``done-<pid>-<id>`` when it
finishes, both holding the task id: a run cut short (killed, drained) leaves
only the first.
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
    runs, run = Path(marker_dir), f"{os.getpid()}-{uuid.uuid4().hex}"
    (runs / f"run-{run}").write_text(ctx.task_id or "")
    while not (runs / "release").exists():
        await asyncio.sleep(0.05)
    (runs / f"done-{run}").write_text(ctx.task_id or "")
    return f"finished in {os.getpid()}"


@mcp.tool(task=True)
async def report_until_released(marker_dir: str, ctx: Context) -> str:
    """``record_and_wait`` that reports every 0.3 s, each report naming its process."""
    runs, run = Path(marker_dir), f"{os.getpid()}-{uuid.uuid4().hex}"
    (runs / f"run-{run}").write_text(ctx.task_id or "")
    report = 0
    while not (runs / "release").exists():
        report += 1
        await ctx.report_progress(report, None, f"{os.getpid()}: report {report}")
        await asyncio.sleep(0.3)
    (runs / f"done-{run}").write_text(ctx.task_id or "")
    return f"finished in {os.getpid()}"
