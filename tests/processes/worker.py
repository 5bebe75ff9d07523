"""A worker in its own process: ``python -m tests.processes.worker ADDRESS QUEUE``.

It is the crash server with ``TemporalTasks`` pointed at the test's Temporal:
entering the server's lifespan connects and runs the in-process worker.
"""

from __future__ import annotations

import asyncio
import sys

from fastmcp_temporal import LegPolicy, TemporalTasks
from tests.processes.crash_server import mcp


async def main(address: str, task_queue: str) -> None:
    mcp.add_extension(
        TemporalTasks(
            address=address, task_queue=task_queue, leg_policy=LegPolicy(heartbeat_timeout_s=2)
        )
    )
    async with mcp._lifespan_manager():
        print("worker ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
