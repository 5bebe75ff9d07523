"""The task state machine (deterministic workflow code) and its boundary models."""

from fastmcp_temporal.workflows.models import (
    CallerSnapshot,
    InputDelivery,
    LegOutcome,
    LegPolicy,
    LegRequest,
    TaskStart,
    TaskStatus,
    TaskView,
)
from fastmcp_temporal.workflows.task_workflow import McpTaskWorkflow, McpToolTaskWorkflow

__all__ = [
    "CallerSnapshot",
    "InputDelivery",
    "LegOutcome",
    "LegPolicy",
    "LegRequest",
    "McpTaskWorkflow",
    "McpToolTaskWorkflow",
    "TaskStart",
    "TaskStatus",
    "TaskView",
]
