"""The research agent as an MCP server on the embedded Temporal.

.venv/bin/python -m examples.research_agent.server --port 8001
"""

from __future__ import annotations

import argparse

# --8<-- [start:register]
from fastmcp import FastMCP

from examples.research_agent.agent import ResearchAgent, search, write_report
from fastmcp_temporal import TemporalTasks, workflow_tool

mcp = FastMCP("research agent")
mcp.add_extension(TemporalTasks())
mcp.add_tool(workflow_tool(ResearchAgent, activities=[search, write_report]))
# --8<-- [end:register]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args()
    mcp.run(transport="http", host="127.0.0.1", port=args.port)
