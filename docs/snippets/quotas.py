"""Quotas: how many open tasks one caller may hold, overall and per tool."""

# --8<-- [start:quotas]
from fastmcp_temporal import TemporalTasks, ToolOptions

tasks = TemporalTasks(
    max_open_tasks_per_caller=5,  # all task tools together
    tools={"render": ToolOptions(max_open_tasks_per_caller=1)},  # render: its own pool of 1
)
# --8<-- [end:quotas]
