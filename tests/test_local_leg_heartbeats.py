"""A local leg sends no heartbeats: Temporal has none for it, and each one is refused.

A local activity runs inside its workflow task; the SDK core rejects every
heartbeat it gets for one (``UnknownActivity``) and logs a warning,
once a second for as long as the leg runs and once per progress report.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from fastmcp import Client, Context, FastMCP

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.tasks.starter import ToolOptions

REFUSED = "Activity heartbeat failed"


async def test_a_long_local_leg_with_progress_sends_no_heartbeat(
    temporal_tasks: Callable[..., TemporalTasks], capfd: pytest.CaptureFixture[str]
) -> None:
    mcp = FastMCP("local")
    mcp.add_extension(temporal_tasks(tools={"steady": ToolOptions(local_legs=True)}))

    @mcp.tool(task=True)
    async def steady(ctx: Context) -> str:
        for step in range(3):
            await ctx.report_progress(step, 3, f"step {step}")
            await asyncio.sleep(0.8)
        return "done"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "steady", {})
        assert (await task.result()).data == "done"
    captured = capfd.readouterr()  # the core logs to the process's stdout
    assert REFUSED not in captured.out + captured.err
