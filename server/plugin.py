"""``McpTasksPlugin``: MCP tasks as a Temporal plugin, for any ``Worker``.

```python
client = await Client.connect("localhost:7233", plugins=[McpTasksPlugin(mcp)])
worker = Worker(client, task_queue="mcp-tasks", plugins=[McpTasksPlugin(mcp)])
```

It bundles what a worker needs to run the tasks of one FastMCP server: the task
workflow, the tool-leg activity bound to that server, the pydantic data
converter the task models need, and sandbox pass-through for the MCP stack
(its import chain touches ``gettext`` at import time, which the sandbox forbids).
"""

from __future__ import annotations

import dataclasses

from fastmcp import FastMCP
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.plugin import SimplePlugin
from temporalio.worker import WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from fastmcp_temporal.activities.tool_leg import ToolLegActivity
from fastmcp_temporal.workflows.task_workflow import McpTaskWorkflow

_PASSTHROUGH = ("fastmcp_temporal", "fastmcp", "mcp", "mcp_types", "pydantic")


def _with_pydantic_payloads(converter: DataConverter | None) -> DataConverter:
    """Keep the caller's codec (encryption) but convert payloads with pydantic."""
    if converter is None:
        return pydantic_data_converter
    return dataclasses.replace(
        converter, payload_converter_class=pydantic_data_converter.payload_converter_class
    )


def _passthrough(runner: WorkflowRunner | None) -> WorkflowRunner:
    if runner is None:
        runner = SandboxedWorkflowRunner()
    if isinstance(runner, SandboxedWorkflowRunner):
        return dataclasses.replace(
            runner, restrictions=runner.restrictions.with_passthrough_modules(*_PASSTHROUGH)
        )
    return runner


class McpTasksPlugin(SimplePlugin):
    """The task workflow + the tool-leg activity of ``server`` + the pydantic converter."""

    def __init__(self, server: FastMCP, *, heartbeat_interval_s: float = 1.0) -> None:
        legs = ToolLegActivity(server, heartbeat_interval_s=heartbeat_interval_s)
        super().__init__(
            "fastmcp_temporal.McpTasksPlugin",
            data_converter=_with_pydantic_payloads,
            workflows=[McpTaskWorkflow],
            activities=[legs.run_leg],
            workflow_runner=_passthrough,
        )
