"""A worker process for ``compare.py``'s "durable sync call, separate worker" rows.

    .venv/bin/python bench/support/echo_worker.py <temporal address> <task queue>

The same no-op ``task=True`` tools as ``compare.echo_server`` (a default one and
a short one), run by a plain Temporal ``Worker`` with ``McpTasksPlugin`` (the
shape of ``fastmcp-temporal worker``). Its front end has ``run_worker=False``,
so no start is eager and every workflow task goes through this worker's poller.
Prints ``ready`` once the worker polls.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta

from fastmcp import FastMCP
from fastmcp.utilities.tasks import TaskConfig
from temporalio.client import Client
from temporalio.worker import Worker

from fastmcp_temporal import McpTasksPlugin

mcp = FastMCP("bench-apart")
fixed = TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=20))


@mcp.tool(task=fixed)
async def echo_plain(text: str) -> str:
    return text


@mcp.tool(task=fixed, timeout=10)
async def echo_plain_short(text: str) -> str:
    return text


async def main(address: str, queue: str) -> None:
    client = await Client.connect(address, plugins=[McpTasksPlugin(mcp)])
    async with Worker(client, task_queue=queue, graceful_shutdown_timeout=timedelta(seconds=2)):
        print("ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
