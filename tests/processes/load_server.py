"""The 1000-task load test's MCP server, in its own process.

    python -m tests.processes.load_server ADDRESS QUEUE --port P

One ``required``-mode ``echo`` task tool on ``TemporalTasks`` with its own worker,
served over streamable HTTP as a user's server is (``mcp.run``). In its own
process, the server and its worker use one core while the test's fifty clients
use the other, as they would on two machines; in the test's process the three
shared one interpreter and the load test took half again as long.
"""

from __future__ import annotations

import argparse
from datetime import timedelta

from fastmcp import FastMCP
from fastmcp.utilities.tasks import TaskConfig

from fastmcp_temporal import TemporalTasks


def build(address: str, task_queue: str) -> FastMCP:
    mcp = FastMCP("load")
    mcp.add_extension(TemporalTasks(address=address, task_queue=task_queue))

    @mcp.tool(task=TaskConfig(mode="required", poll_interval=timedelta(milliseconds=200)))
    async def echo(n: int) -> int:
        return n

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("address")
    parser.add_argument("task_queue")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    build(args.address, args.task_queue).run(
        transport="http", host="127.0.0.1", port=args.port, show_banner=False
    )


if __name__ == "__main__":
    main()
