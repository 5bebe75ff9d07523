"""A server whose task tool returns a big result, for the worker CLI in another process.

BIG_TASK_QUEUE=q TEMPORAL_ADDRESS=... fastmcp-temporal worker tests/processes/big_server.py
"""

from __future__ import annotations

import base64
import os
import random

from fastmcp import FastMCP
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

    return mcp


mcp = build(TemporalTasks(task_queue=os.environ.get("BIG_TASK_QUEUE", "big")))
