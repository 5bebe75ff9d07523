"""The soak's MCP server (``bench/soak.py``): three kinds of task tool.

Front end: ``fastmcp run bench/support/soak_server.py --transport http`` with
``FASTMCP_TEMPORAL_RUN_WORKER=false``; worker: ``fastmcp-temporal worker
bench/support/soak_server.py``. Both join the embedded Temporal of
``FASTMCP_TEMPORAL_DATA_DIR``, which the front end starts.
"""

from __future__ import annotations

import asyncio

import mcp_types
from fastmcp import Context, FastMCP

from fastmcp_temporal import TemporalTasks

mcp = FastMCP("soak")
mcp.add_extension(TemporalTasks(ui=False))


@mcp.tool(task=True)
async def quick(n: int) -> int:
    return n * 2


@mcp.tool(task=True)
async def slow(steps: int, ctx: Context) -> str:
    for step in range(steps):
        await ctx.report_progress(step, steps, f"step {step + 1} of {steps}")
        await asyncio.sleep(0.5)
    return f"slow {steps}"


@mcp.tool(task=True)
async def asking(item: str, ctx: Context) -> str:
    answer = (ctx.input_responses or {}).get("approve")
    if not isinstance(answer, mcp_types.ElicitResult):
        return mcp_types.InputRequiredResult(  # type: ignore[return-value]
            input_requests={
                "approve": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message=f"Approve {item}?",
                        requested_schema={
                            "type": "object",
                            "properties": {"ok": {"type": "boolean"}},
                        },
                    )
                )
            }
        )
    return f"{item}: {(answer.content or {}).get('ok')}"
