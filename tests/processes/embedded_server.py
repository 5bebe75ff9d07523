"""An MCP server on the shared embedded Temporal of a data directory.

    python -m tests.processes.embedded_server --name a --port P --data-dir D [--ui] [--task-queue Q]

Several of these on one ``D`` must share one ``temporal`` process; ``--name``
names the server (and so its default task queue on the embedded server), and
``nap`` answers with it, so a test sees which server ran a task. It sets up no
logging, as a FastMCP quick start does; ``--ui`` starts the Web UI too.
"""

from __future__ import annotations

import argparse
import asyncio

from fastmcp import FastMCP

from fastmcp_temporal import LegPolicy, TemporalTasks


def build(name: str, data_dir: str, *, ui: bool = False, task_queue: str | None = None) -> FastMCP:
    mcp = FastMCP(name)
    mcp.add_extension(
        TemporalTasks(
            data_dir=data_dir,
            ui=ui,
            task_queue=task_queue,
            leg_policy=LegPolicy(heartbeat_timeout_s=2),
        )
    )

    @mcp.tool(task=True)
    async def nap(seconds: float, tag: str) -> str:
        await asyncio.sleep(seconds)
        return f"{tag} rested on {name}"

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--ui", action="store_true")
    parser.add_argument("--task-queue")
    args = parser.parse_args()
    server = build(args.name, args.data_dir, ui=args.ui, task_queue=args.task_queue)
    server.run(transport="http", host="127.0.0.1", port=args.port, show_banner=False)


if __name__ == "__main__":
    main()
