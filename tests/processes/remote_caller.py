"""The orchestrating server of the remote-call tests: workflow tools calling ``peer``.

    python -m tests.processes.remote_caller ADDRESS QUEUE PEER_URL TOKEN

As a process it is a worker (``TemporalTasks`` with its in-process worker and the
``peer`` connection) that a test can ``kill -9``; ``build`` serves the tests'
in-process servers and front ends too.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from fastmcp import Context, FastMCP

from fastmcp_temporal import (
    LegPolicy,
    RemoteServer,
    Steps,
    TemporalTasks,
    remote_step,
    workflow_tool,
)
from fastmcp_temporal.server.cli.worker import server_lifespan
from tests.processes.remote_workflows import CallRemote, FanOut, ListRemoteTools, RemoteTour


def tools() -> FastMCP:
    mcp = FastMCP("remote-caller-tools")
    for workflow_class in (CallRemote, FanOut, ListRemoteTools, RemoteTour):
        mcp.add_tool(workflow_tool(workflow_class))

    @mcp.tool(task=True)
    async def count_in_a_function_tool(marker_dir: str, tag: str, ctx: Context) -> str:
        """Part 2: a function tool's body calls a remote task as a durable step."""
        steps = Steps(ctx)
        result = await remote_step(
            steps, "peer", "count_and_wait", {"marker_dir": marker_dir, "tag": tag}
        )
        return " ".join(getattr(block, "text", "") for block in result.content)

    return mcp


def connections(peer_url: str, token: str) -> dict[str, Any]:
    return {
        "peer": RemoteServer.http(peer_url, bearer_token=token),
        "down": RemoteServer.http("http://127.0.0.1:9/mcp"),
    }


async def main(address: str, task_queue: str, peer_url: str, token: str) -> None:
    mcp = FastMCP("remote-caller")
    mcp.add_extension(
        TemporalTasks(
            address=address,
            task_queue=task_queue,
            leg_policy=LegPolicy(heartbeat_timeout_s=2),
            remote_servers=connections(peer_url, token),
        )
    )
    mcp.mount(tools())
    async with server_lifespan(mcp):
        print("worker ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
