"""The task state machine (deterministic workflow code), its boundary models, and
the helpers a workflow tool uses inside its workflow (``ask``, ``sample``,
``report_progress``, ``caller``, ``remote``)."""

from fastmcp_temporal.workflows.models import (
    Caller,
    CallerSnapshot,
    InputDelivery,
    LegOutcome,
    LegPolicy,
    LegRequest,
    TaskStart,
    TaskStatus,
    TaskView,
)
from fastmcp_temporal.workflows.remote import (
    RemoteError,
    RemoteTaskError,
    RemoteToolError,
    RemoteUnavailable,
    remote,
)
from fastmcp_temporal.workflows.task_workflow import McpTaskWorkflow, McpToolTaskWorkflow
from fastmcp_temporal.workflows.tool_helpers import (
    SamplingError,
    SamplingRefused,
    SamplingResult,
    ask,
    caller,
    report_progress,
    sample,
)

__all__ = [
    "Caller",
    "CallerSnapshot",
    "InputDelivery",
    "LegOutcome",
    "LegPolicy",
    "LegRequest",
    "McpTaskWorkflow",
    "McpToolTaskWorkflow",
    "RemoteError",
    "RemoteTaskError",
    "RemoteToolError",
    "RemoteUnavailable",
    "SamplingError",
    "SamplingRefused",
    "SamplingResult",
    "TaskStart",
    "TaskStatus",
    "TaskView",
    "ask",
    "caller",
    "remote",
    "report_progress",
    "sample",
]
