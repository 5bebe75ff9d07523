"""A server for durable synchronous calls in its own process (killed, or spoken to over stdio).

    python -m tests.processes.sync_server ADDRESS QUEUE stdio
    python -m tests.processes.sync_server ADDRESS QUEUE http PORT       # a front end, no worker
    python -m tests.processes.sync_server ADDRESS QUEUE http-worker PORT [GRACE_S]   # and worker
    python -m tests.processes.sync_server ADDRESS QUEUE uvicorn-worker PORT [GRACE_S]

Its tools are the crash server's ``record_and_wait`` (each run recorded in a
directory, finished by a ``release`` file) and ``nap``. Over ``http`` it is a
stateless front end (the test runs the worker elsewhere), so killing it kills
only the request that waits; over ``http-worker`` it runs the worker too, as a
single-process deployment does (the drain tests send it SIGTERM; ``GRACE_S`` is
its ``drain_grace_s``, the default 30 s if not given); ``uvicorn-worker`` is the
same served as ``uvicorn app:app`` serves (uvicorn owns SIGTERM before the
server's lifespan starts); over stdio it runs its own worker, as a host's local
server does.
"""

from __future__ import annotations

import asyncio
import sys

import uvicorn
from fastmcp import FastMCP

from fastmcp_temporal import LegPolicy, TemporalTasks
from tests.processes.crash_server import mcp as crash_server


def build(
    address: str,
    task_queue: str,
    *,
    run_worker: bool,
    heartbeat_timeout_s: float = 2,
    drain_grace_s: float | None = None,
) -> FastMCP:
    mcp = FastMCP("sync-process")
    mcp.add_extension(
        TemporalTasks(
            address=address,
            task_queue=task_queue,
            run_worker=run_worker,
            leg_policy=LegPolicy(heartbeat_timeout_s=heartbeat_timeout_s),
            drain_grace_s=drain_grace_s,
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
    if transport == "stdio":
        build(address, task_queue, run_worker=True).run(transport="stdio", show_banner=False)
        return
    # Drained, not killed: the drain must hand a running leg back by itself, so a
    # worker a loaded machine starves for a moment is never taken for a lost one.
    hosts_worker = transport in ("http-worker", "uvicorn-worker")
    mcp = build(
        address,
        task_queue,
        run_worker=hosts_worker,
        heartbeat_timeout_s=60 if hosts_worker else 2,
        drain_grace_s=float(sys.argv[5]) if len(sys.argv) > 5 else None,
    )
    if transport == "uvicorn-worker":
        uvicorn.run(mcp.http_app(), host="127.0.0.1", port=int(sys.argv[4]), log_level="warning")
        return
    mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[4]), show_banner=False)


if __name__ == "__main__":
    main()
