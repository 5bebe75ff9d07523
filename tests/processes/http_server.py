"""An MCP server process on the embedded Temporal, for restart tests.

    python -m tests.processes.http_server --port P --data-dir D

It uses the embedded dev server of ``D`` (SQLite file), which it starts when
none runs there; killed, it leaves that server to stop after its linger, and
started again on the same data directory it must bring every task back. It
runs the way a user's server runs: ``mcp.run``.
"""

from __future__ import annotations

import argparse
import asyncio

from fastmcp import Context, FastMCP

from fastmcp_temporal import LegPolicy, TemporalTasks
from tests.processes.crash_server import mcp as crash_server


def build(data_dir: str) -> FastMCP:
    mcp = FastMCP("restartable")
    mcp.add_extension(
        TemporalTasks(
            data_dir=data_dir,
            ui=False,
            task_queue="restartable",
            leg_policy=LegPolicy(heartbeat_timeout_s=2),
        )
    )

    @mcp.tool(task=True)
    async def nap(seconds: float, tag: str, ctx: Context) -> str:
        await asyncio.sleep(seconds)
        return f"{tag} rested"

    mcp.mount(crash_server)  # record_and_wait: records each run, waits for ``release``

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data-dir", required=True)
    args = parser.parse_args()
    build(args.data_dir).run(transport="http", host="127.0.0.1", port=args.port, show_banner=False)


if __name__ == "__main__":
    main()
