"""A server whose task tool returns a big result, for the worker CLI in another process.

BIG_TASK_QUEUE=q TEMPORAL_ADDRESS=... fastmcp-temporal worker tests/processes/big_server.py
"""

from __future__ import annotations

import base64
import os
import random

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.tools import ToolResult
from mcp_types import TextContent

from fastmcp_temporal import TemporalTasks


def blob_text(size: int, seed: int = 2663) -> str:
    """``size`` characters of seeded, barely compressible text."""
    return base64.b64encode(random.Random(seed).randbytes(size * 3 // 4 + 3)).decode()[:size]


def build(tasks: TemporalTasks) -> FastMCP:
    mcp = FastMCP("big")
    mcp.add_extension(tasks)

    @mcp.tool(task=True)
    async def produce(size: int) -> ToolResult:
        # Content only: a plain ``-> str`` would carry the text twice (structuredContent).
        return ToolResult(content=[TextContent(type="text", text=blob_text(size))])

    @mcp.tool(task=True)
    async def measure(text: str) -> int:
        return len(text)

    @mcp.tool(task=True)
    async def measure_answer(ctx: Context) -> int:
        """Ask the client for a text, then return its length."""
        answer = (ctx.input_responses or {}).get("text")
        if not isinstance(answer, mcp_types.ElicitResult) or not answer.content:
            return mcp_types.InputRequiredResult(  # type: ignore[return-value]
                input_requests={
                    "text": mcp_types.ElicitRequest(
                        params=mcp_types.ElicitRequestFormParams(
                            message="The text?",
                            requested_schema={
                                "type": "object",
                                "properties": {"text": {"type": "string"}},
                            },
                        )
                    )
                }
            )
        return len(str(answer.content["text"]))

    return mcp


mcp = build(TemporalTasks(task_queue=os.environ.get("BIG_TASK_QUEUE", "big")))
