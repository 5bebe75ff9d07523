"""The remote MCP server of the stdio remote-call tests: ``remote_peer``'s tools over stdio.

    python -m tests.processes.stdio_peer --kind ours|peer --tag T [--address A --task-queue Q]

Started by the orchestrating worker itself (``RemoteServer.stdio``), which speaks
MCP over this process's stdin and stdout: nothing else may print to stdout. No
token (a stdio server is the worker's own child). ``--tag`` only marks the command
line, so a test can find its own process (``pgrep -f``) after the worker stopped.
"""

from __future__ import annotations

import argparse

from fastmcp import FastMCP

from tests.processes.remote_peer import RefuseWidgets, add_tools


def build(kind: str, address: str | None, task_queue: str | None) -> FastMCP:
    mcp = FastMCP(f"stdio-{kind}")
    if kind == "ours":
        from fastmcp_temporal import LegPolicy, TemporalTasks

        mcp.add_extension(
            TemporalTasks(
                address=address,
                task_queue=task_queue,
                ui=False,
                leg_policy=LegPolicy(heartbeat_timeout_s=2),
            )
        )
    else:
        from fastmcp_tasks import TasksExtension

        mcp.add_extension(TasksExtension(url="memory://"))
    add_tools(mcp)
    mcp.add_middleware(RefuseWidgets())
    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=["ours", "peer"], required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--address")
    parser.add_argument("--task-queue")
    args = parser.parse_args()
    build(args.kind, args.address, args.task_queue).run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
