"""The orchestrator: the triage agent as an MCP task tool, calling the support desk.

    python -m examples.orchestrator.triage_server --port 8010 --desk-url http://127.0.0.1:8011/mcp

The desk's URL is the worker's configuration (``remote_servers``), never in
workflow history: the workflow only knows the name ``"desk"``.
"""

from __future__ import annotations

import argparse
from typing import Any

from fastmcp import FastMCP

from examples.orchestrator.triage import TriageAgent
from fastmcp_temporal import RemoteServer, TemporalTasks, workflow_tool


def build(desk_url: str, **tasks_options: Any) -> FastMCP:
    """The orchestrator; ``tasks_options`` go to ``TemporalTasks`` (tests pick their Temporal)."""
    mcp = FastMCP("triage")
    desk = RemoteServer.http(desk_url)
    mcp.add_extension(TemporalTasks(remote_servers={"desk": desk}, **tasks_options))
    mcp.add_tool(workflow_tool(TriageAgent))
    return mcp


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8010)
    parser.add_argument("--desk-url", default="http://127.0.0.1:8011/mcp")
    args = parser.parse_args()
    build(args.desk_url).run(
        transport="http", host="127.0.0.1", port=args.port, show_banner=False, log_level="warning"
    )
