"""Durable MCP background tasks (SEP-2663) for FastMCP, backed by Temporal.

```python
from fastmcp_temporal import TemporalTasks

mcp.add_extension(TemporalTasks())
```

Clients: ``fastmcp_temporal.client`` (``TasksClientExtension``, ``call_tool_task``).

This module, ``.workflows``, ``.client`` and ``.testing`` are the public
surface: every name a user configures or calls is in one of their ``__all__``,
and anything else is internal (``fastmcp_temporal._surface``).
"""

from fastmcp_temporal.activities.remote_connections import RemoteServer
from fastmcp_temporal.activities.remote_steps import remote_step
from fastmcp_temporal.activities.steps import Steps
from fastmcp_temporal.client import TasksClientExtension, ToolTask, call_tool_task
from fastmcp_temporal.server.core.codec import task_data_converter
from fastmcp_temporal.server.core.settings import TemporalTasksSettings
from fastmcp_temporal.server.embedded.devserver import DevServer
from fastmcp_temporal.server.extension import TemporalTasks
from fastmcp_temporal.server.protocol.idempotency import (
    IDEMPOTENCY_KEY_HEADER,
    IDEMPOTENCY_KEY_META,
)
from fastmcp_temporal.server.tasks.fairness import FairnessCaller
from fastmcp_temporal.server.tasks.starter import ToolOptions
from fastmcp_temporal.server.temporal.plugin import McpTasksPlugin
from fastmcp_temporal.server.temporal.remote_plugin import RemoteMcpPlugin
from fastmcp_temporal.server.temporal.versioning import WorkerVersioning
from fastmcp_temporal.server.temporal.workflow_tools import workflow_tool, workflow_tool_parts
from fastmcp_temporal.workflows.models import LegPolicy

__all__ = [
    "IDEMPOTENCY_KEY_HEADER",
    "IDEMPOTENCY_KEY_META",
    "DevServer",
    "FairnessCaller",
    "LegPolicy",
    "McpTasksPlugin",
    "RemoteMcpPlugin",
    "RemoteServer",
    "Steps",
    "TasksClientExtension",
    "TemporalTasks",
    "TemporalTasksSettings",
    "ToolOptions",
    "ToolTask",
    "WorkerVersioning",
    "call_tool_task",
    "remote_step",
    "task_data_converter",
    "workflow_tool",
    "workflow_tool_parts",
]
