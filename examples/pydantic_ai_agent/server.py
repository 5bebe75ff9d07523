"""The pydantic-ai triage agent as an MCP task tool, on the embedded Temporal.

.venv/bin/python -m examples.pydantic_ai_agent.server --port 8002

Needs the ``agents`` extra (``pip install 'fastmcp-temporal[agents]'``).
"""

from __future__ import annotations

import argparse
from typing import Any

# --8<-- [start:build]
from fastmcp import FastMCP
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin

from examples.pydantic_ai_agent.agent import TriageTicket
from fastmcp_temporal import TemporalTasks, workflow_tool


def build(**tasks_options: Any) -> FastMCP:
    """The server; ``tasks_options`` go to ``TemporalTasks`` (tests pick their Temporal)."""
    mcp = FastMCP("pydantic-ai triage")
    # pydantic-ai's plugin beside ours on the one worker: it adds the agent's
    # activities (model requests, tool calls) and its sandbox pass-through.
    mcp.add_extension(TemporalTasks(plugins=[PydanticAIPlugin()], **tasks_options))
    mcp.add_tool(workflow_tool(TriageTicket))
    return mcp


# --8<-- [end:build]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8002)
    args = parser.parse_args()
    build().run(transport="http", host="127.0.0.1", port=args.port)
