"""The FastMCP side: the extension, wire models, engine, embedded dev server, plugin."""

from fastmcp_temporal.server.embedded.devserver import DevServer
from fastmcp_temporal.server.extension import TemporalTasks
from fastmcp_temporal.server.temporal.plugin import McpTasksPlugin

__all__ = ["DevServer", "McpTasksPlugin", "TemporalTasks"]
