"""A worker process for ``time_to_result.py``'s "worker in its own process" row.

    .venv/bin/python bench/support/crunch_worker.py <temporal address> <task queue> [<tool s>]

The same ``crunch`` tool (2 s, or ``time_to_result.py --tool-s``), run by a
plain Temporal ``Worker`` with ``McpTasksPlugin`` (the shape of
``fastmcp-temporal worker``), with the embedded worker's heartbeat throttle.
The tool's result carries the moment it returned (this machine's wall clock),
since the bench process cannot see it. Prints ``ready`` once the worker polls.
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import timedelta

from fastmcp import FastMCP
from temporalio.client import Client
from temporalio.worker import Worker

from fastmcp_temporal import McpTasksPlugin

TOOL_SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0

mcp = FastMCP("bench")


@mcp.tool(task=True)
async def crunch(token: str) -> str:
    await asyncio.sleep(TOOL_SECONDS)
    return f"{token} {time.time()!r}"


async def main(address: str, queue: str) -> None:
    client = await Client.connect(address, plugins=[McpTasksPlugin(mcp)])
    async with Worker(
        client,
        task_queue=queue,
        max_heartbeat_throttle_interval=timedelta(seconds=1),
        graceful_shutdown_timeout=timedelta(seconds=2),
    ):
        print("ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
