"""Durable synchronous calls: on by default; off for the server or for one tool."""

# --8<-- [start:switches]
from fastmcp_temporal import TemporalTasks, ToolOptions

# Every task=True tool is durable for clients without the tasks extension, except `chat`,
# whose plain calls run inline in the front end as with fastmcp-tasks.
tasks = TemporalTasks(tools={"chat": ToolOptions(durable_sync_calls=False)})

# Or inline for every plain call (FASTMCP_TEMPORAL_DURABLE_SYNC_CALLS=false does the same).
inline_tasks = TemporalTasks(durable_sync_calls=False)
# --8<-- [end:switches]

# --8<-- [start:host_limits]
# Your Cline users set the server's `timeout` to 600 s, and your Codex users
# `tool_timeout_sec = 120`: the server answers each a little before that, instead of at
# 54 s (Cline's default 60 s) or never (Codex's limit is unknown to it).
known_limits = TemporalTasks(host_limits={"cline": 600, "codex-mcp-client": 120})

# `roll` must run afresh on every call, even with the same arguments: a repeated call
# never attaches to a task its host gave up on (and a host's timeout cancels its task).
fresh_rolls = TemporalTasks(tools={"roll": ToolOptions(attach_repeats=False)})

# A host's timeout cancels the task, as a person's cancel (the behaviour before issue 51).
cancelling = TemporalTasks(on_host_timeout="cancel")
# --8<-- [end:host_limits]
