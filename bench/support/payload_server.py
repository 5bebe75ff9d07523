"""The MCP server ``bench/large_payloads.py`` measures, in its own process (for its RSS).

    python bench/support/payload_server.py --port 8000 --backend temporal --data-dir /tmp/x
    python bench/support/payload_server.py --port 8000 --backend redis --url redis://127.0.0.1:6379/0

One tool, ``produce(size)``, returns ``size`` characters of text as a single
text block (no structuredContent, so the result is ``size`` bytes, not twice
that), as a task (``produce``) or synchronously (``produce_sync``).
"""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from fastmcp.utilities.tasks import TaskConfig
from mcp_types import TextContent

CHUNK = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/" * 16


def text_of(size: int) -> str:
    return (CHUNK * (size // len(CHUNK) + 1))[:size]


def build(extension: Any) -> FastMCP:
    mcp = FastMCP("payload-bench")
    mcp.add_extension(extension)
    config = TaskConfig(mode="required", poll_interval=timedelta(milliseconds=50))

    @mcp.tool(task=config)
    async def produce(size: int) -> ToolResult:
        return ToolResult(content=[TextContent(type="text", text=text_of(size))])

    @mcp.tool
    async def produce_sync(size: int) -> ToolResult:
        return ToolResult(content=[TextContent(type="text", text=text_of(size))])

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--backend", choices=["temporal", "redis"], required=True)
    parser.add_argument("--data-dir")
    parser.add_argument("--url")
    args = parser.parse_args()
    if args.backend == "temporal":
        from fastmcp_temporal import TemporalTasks

        extension: Any = TemporalTasks(data_dir=args.data_dir, ui=False)
    else:
        from fastmcp_tasks import TasksExtension

        extension = TasksExtension(url=args.url)
    build(extension).run(transport="http", host="127.0.0.1", port=args.port, show_banner=False)


if __name__ == "__main__":
    main()
