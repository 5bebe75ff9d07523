"""The MCP server of ``bench/waiting_calls.py``: a long tool that reports, and a quick one.

Front end: ``bench/support/counting_front_end.py`` (``run_worker=False``), which counts
its Temporal requests; worker: ``fastmcp-temporal worker bench/support/waiting_server.py``.
Both join the embedded Temporal of ``FASTMCP_TEMPORAL_DATA_DIR``, which the front end starts.
"""

from __future__ import annotations

import asyncio

from fastmcp import Context, FastMCP

from fastmcp_temporal import TemporalTasks

mcp = FastMCP("waiting")
mcp.add_extension(TemporalTasks(ui=False))


@mcp.tool(task=True)
async def work(n: int, seconds: float, reports: int, ctx: Context) -> str:
    """``reports`` progress reports, evenly over ``seconds``."""
    for step in range(1, reports + 1):
        await ctx.report_progress(step, reports, f"step {step} of {reports}")
        await asyncio.sleep(seconds / reports)
    return f"worked {n}"


@mcp.tool(task=True)
async def quick(n: int) -> int:
    return n * 2
