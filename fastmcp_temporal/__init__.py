"""Durable MCP background tasks (SEP-2663) for FastMCP, backed by Temporal.

```python
from fastmcp_temporal import TemporalTasks

mcp.add_extension(TemporalTasks())
```

Clients: ``fastmcp_temporal.client`` (``TasksClientExtension``, ``call_tool_task``).
"""

from fastmcp_temporal.activities.remote_connections import RemoteServer
from fastmcp_temporal.activities.remote_steps import remote_step
from fastmcp_temporal.activities.steps import Steps
from fastmcp_temporal.client import TasksClientExtension, ToolTask, call_tool_task
from fastmcp_temporal.server.devserver import DevServer
from fastmcp_temporal.server.extension import TemporalTasks
from fastmcp_temporal.server.plugin import McpTasksPlugin
from fastmcp_temporal.server.remote_plugin import RemoteMcpPlugin
from fastmcp_temporal.server.versioning import WorkerVersioning
from fastmcp_temporal.server.workflow_tools import workflow_tool, workflow_tool_parts
from fastmcp_temporal.workflows.models import LegPolicy

__all__ = [
    "DevServer",
    "LegPolicy",
    "McpTasksPlugin",
    "RemoteMcpPlugin",
    "RemoteServer",
    "Steps",
    "TasksClientExtension",
    "TemporalTasks",
    "ToolTask",
    "WorkerVersioning",
    "call_tool_task",
    "remote_step",
    "workflow_tool",
    "workflow_tool_parts",
]
