"""A server whose tasks may predate the embedded default's per-server task queue.

    fastmcp-temporal worker tests/processes/upgraded_server.py --data-dir D

``build(TemporalTasks(task_queue="mcp-tasks", ...))`` is the server before the
upgrade (the embedded default's old queue), ``build(TemporalTasks(...))`` after;
``$UPGRADED_SERVER_NAME`` (default ``app``) renames it, and with it its
embedded queue. ``ask`` parks for input; ``crunch`` runs until its ``go_file``
exists.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import mcp_types
from fastmcp import Context, FastMCP

from fastmcp_temporal import TemporalTasks

NAME = os.environ.get("UPGRADED_SERVER_NAME", "app")


def question() -> mcp_types.InputRequiredResult:
    return mcp_types.InputRequiredResult(
        input_requests={
            "ok": mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message="OK?", requested_schema={"type": "object", "properties": {}}
                )
            )
        }
    )


def build(tasks: TemporalTasks, name: str = NAME) -> FastMCP:
    mcp = FastMCP(name)
    mcp.add_extension(tasks)

    @mcp.tool(task=True)
    async def ask(ctx: Context) -> str:
        return question() if not ctx.input_responses else "answered"  # type: ignore[return-value]

    @mcp.tool(task=True)
    async def crunch(go_file: str) -> str:
        while not Path(go_file).exists():
            await asyncio.sleep(0.05)
        return "crunched"

    return mcp


mcp = build(TemporalTasks(ui=False))
