"""A server for durable synchronous calls in its own process (killed, or spoken to over stdio).

    python -m tests.processes.sync_server ADDRESS QUEUE stdio
    python -m tests.processes.sync_server ADDRESS QUEUE http PORT    # a front end, no worker

Its tools are the crash server's ``record_and_wait`` (each run recorded in a
directory, finished by a ``release`` file) and ``nap``. Over HTTP it is a
stateless front end (the test runs the worker elsewhere), so killing it kills
only the request that waits; over stdio it runs its own worker, as a host's
local server does.
"""

from __future__ import annotations

import asyncio
import sys

from fastmcp import FastMCP

from fastmcp_temporal import LegPolicy, TemporalTasks
from tests.processes.crash_server import mcp as crash_server


def build(address: str, task_queue: str, *, run_worker: bool) -> FastMCP:
    mcp = FastMCP("sync-process")
    mcp.add_extension(
        TemporalTasks(
            address=address,
            task_queue=task_queue,
            run_worker=run_worker,
            leg_policy=LegPolicy(heartbeat_timeout_s=2),
        )
    )

    @mcp.tool(task=True)
    async def nap(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "rested"

    mcp.mount(crash_server)
    return mcp


def main() -> None:
    address, task_queue, transport = sys.argv[1:4]
    mcp = build(address, task_queue, run_worker=transport == "stdio")
    if transport == "stdio":
        mcp.run(transport="stdio", show_banner=False)
    else:
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[4]), show_banner=False)


if __name__ == "__main__":
    main()
