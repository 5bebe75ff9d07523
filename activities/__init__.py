"""Activities: the I/O side of a task -- running the tool body, one leg at a time."""

from fastmcp_temporal.activities.progress import LegProgress
from fastmcp_temporal.activities.steps import StepCheckpoint, Steps
from fastmcp_temporal.activities.task_context import TaskContext
from fastmcp_temporal.activities.tool_leg import ToolLegActivity

__all__ = ["LegProgress", "StepCheckpoint", "Steps", "TaskContext", "ToolLegActivity"]
