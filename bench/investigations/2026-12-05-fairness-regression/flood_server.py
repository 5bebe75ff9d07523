"""The worker side of ``repro.py --variants apart``: the tool, each body's start appended to a file.

fastmcp-temporal worker flood_server.py --task-queue Q --max-concurrent-legs 4
"""

from __future__ import annotations

import asyncio
import os
import time

from fastmcp import FastMCP

from fastmcp_temporal import TemporalTasks

mcp = FastMCP("fairness-repro")
mcp.add_extension(TemporalTasks(ui=False))
STARTS = os.environ["FAIRNESS_REPRO_STARTS"]


@mcp.tool(task=True)
async def work(label: str, seconds: float) -> str:
    with open(STARTS, "a") as starts:
        starts.write(f"{label} {time.time()}\n")
    await asyncio.sleep(seconds)
    return label
