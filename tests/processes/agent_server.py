"""A server with one workflow tool (for worker processes in the tests)."""

from __future__ import annotations

from fastmcp import FastMCP

from fastmcp_temporal import workflow_tool
from tests.processes.agent_workflows import GreeterAgent, logged_step

mcp = FastMCP("agents")
mcp.add_tool(workflow_tool(GreeterAgent, activities=[logged_step]))
