"""A worker in its own process: ``python -m tests.processes.worker ADDRESS QUEUE [MODULE]``.

It is a test server module's ``mcp`` (default: the crash server) with
``TemporalTasks`` pointed at the test's Temporal, and the module's ``plugins()``
if it has them (an agent framework's): entering the server's lifespan connects
and runs the in-process worker.
"""

from __future__ import annotations

import asyncio
import importlib
import sys

from fastmcp_temporal import LegPolicy, TemporalTasks
from fastmcp_temporal.server.cli.worker import server_lifespan


async def main(address: str, task_queue: str, module: str) -> None:
    served = importlib.import_module(module)
    mcp = served.mcp
    mcp.add_extension(
        TemporalTasks(
            address=address,
            task_queue=task_queue,
            leg_policy=LegPolicy(heartbeat_timeout_s=2),
            plugins=getattr(served, "plugins", tuple)(),
        )
    )
    async with server_lifespan(mcp):
        print("worker ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    module = sys.argv[3] if len(sys.argv) > 3 else "tests.processes.crash_server"
    asyncio.run(main(sys.argv[1], sys.argv[2], module))
