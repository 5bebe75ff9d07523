"""What crosses the activity boundary when a workflow calls another MCP server.

Only the connection's *name* is ever in these models (and so in history): its
URL, headers, tokens and command live on the worker (``RemoteServer``). The
remote tool's arguments, answers and results are recorded like any activity's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

#: Activity names (one set for every connection; the connection is an argument).
LIST_TOOLS_ACTIVITY = "fastmcp_temporal.remote.list_tools"
CALL_TOOL_ACTIVITY = "fastmcp_temporal.remote.call_tool"
WAIT_TASK_ACTIVITY = "fastmcp_temporal.remote.wait_task"
ANSWER_TASK_ACTIVITY = "fastmcp_temporal.remote.answer_task"
CANCEL_TASK_ACTIVITY = "fastmcp_temporal.remote.cancel_task"

#: ``ApplicationError.type`` values the remote activities raise; the workflow
#: side turns them into ``RemoteUnavailable`` / ``RemoteToolError`` /
#: ``RemoteTaskError``.
UNAVAILABLE_TYPE = "RemoteUnavailable"
TOOL_ERROR_TYPE = "RemoteToolError"
TASK_GONE_TYPE = "RemoteTaskGone"

REMOTE_TERMINAL = ("completed", "failed", "cancelled")


class RemoteRequest(BaseModel):
    """Which worker-side connection an operation uses (by name only)."""

    server: str


class RemoteCall(RemoteRequest):
    tool: str
    arguments: dict[str, Any] = {}


class RemoteTaskState(BaseModel):
    """A remote task as its ``tasks/get`` (or a listen frame) showed it."""

    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None
    ttl_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None

    def new_requests(self, answered: set[str]) -> dict[str, Any]:
        """Input requests not answered yet (the remote keeps showing answered
        keys until it applies the ``tasks/update``)."""
        if self.status != "input_required":
            return {}
        return {k: v for k, v in (self.input_requests or {}).items() if k not in answered}


class RemoteCallOutcome(BaseModel):
    """``tools/call``'s answer: a result (the remote ran it synchronously) or a task."""

    result: dict[str, Any] | None = None
    task: RemoteTaskState | None = None


class RemoteWait(RemoteRequest):
    """Wait until the remote task ends, asks for something new, or (with
    ``progress_after_s``) shows a status message other than ``status_message``.

    ``give_up_after_s``: return the task as it is after this long (the first,
    local wait of a call: ``RemoteServer._wait_locally_first``).
    """

    tool: str
    task_id: str
    answered: list[str] = []
    status_message: str | None = None
    progress_after_s: float | None = None
    give_up_after_s: float | None = None


class RemoteAnswer(RemoteRequest):
    task_id: str
    responses: dict[str, Any]


class RemoteCancel(RemoteRequest):
    task_id: str
