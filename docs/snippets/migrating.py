"""Migrating from the peer: one line changes on the server."""

from fastmcp import FastMCP

# --8<-- [start:import]
from fastmcp_temporal import TemporalTasks

# --8<-- [end:import]
mcp = FastMCP("migrated")
# --8<-- [start:extension]
mcp.add_extension(TemporalTasks())  # instead of fastmcp_tasks.TasksExtension()
# --8<-- [end:extension]
