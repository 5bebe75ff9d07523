"""Durable synchronous calls: on by default; off for the server or for one tool."""

# --8<-- [start:switches]
from fastmcp_temporal import TemporalTasks, ToolOptions

# Every task=True tool is durable for clients without the tasks extension, except `chat`,
# whose plain calls run inline in the front end as with fastmcp-tasks.
tasks = TemporalTasks(tools={"chat": ToolOptions(durable_sync_calls=False)})

# Or inline for every plain call (FASTMCP_TEMPORAL_DURABLE_SYNC_CALLS=false does the same).
inline_tasks = TemporalTasks(durable_sync_calls=False)
# --8<-- [end:switches]
