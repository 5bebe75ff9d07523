"""What an operator sees of a task in Temporal, and how to find it again.

An operator who opens the Temporal Web UI should understand a task without
reading code, so every task starts with:

- the workflow type ``McpTask:<tool>`` (the activity type is the tool too);
- a workflow id ``mcp-<scope tag>-<taskId>`` (see ``engine.workflow_id_for``);
- a *static summary* -- the call, ``crunch(dataset="sales.csv", steps=5)`` -- and
  *static details* (task id, tool, TTL, where its legs run);
- the search attributes ``McpToolName`` and ``McpTaskStatus`` (the workflow
  upserts the status on every state change), so ``McpToolName = 'crunch' AND
  McpTaskStatus = 'input_required'`` finds what waits on users.

Summaries go through the payload codec (encrypted with encryption on), but they
are meant to be read, so the preview hides argument values whose names look like
credentials and cuts long ones. Search attributes are never encrypted: they
carry the tool name and the status, nothing else.

A namespace where the search attributes are not registered still works: the
first start is refused, the engine logs once and starts tasks without them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from fastmcp_temporal.workflows.models import (
    SEARCH_ATTRIBUTES,
    TASK_STATUS_ATTRIBUTE,
    TOOL_NAME_ATTRIBUTE,
    WORKFLOW_TYPE,
    WORKFLOW_TYPE_PREFIX,
    TaskStatus,
)

#: ``--search-attribute`` values for ``temporal server start-dev`` and
#: ``temporal operator search-attribute create`` (``--name X --type Keyword``).
SEARCH_ATTRIBUTE_SPECS = tuple(f"{key.name}=Keyword" for key in SEARCH_ATTRIBUTES)
#: Argument names whose values the preview never shows.
_SECRET_NAME = re.compile(r"pass|secret|token|key|auth|cred|cookie|session|private", re.I)
_VALUE_LIMIT = 40
_SUMMARY_LIMIT = 160
TASK_STATUSES: tuple[TaskStatus, ...] = (
    "working",
    "input_required",
    "completed",
    "failed",
    "cancelled",
)


def workflow_type(tool_name: str) -> str:
    return f"{WORKFLOW_TYPE_PREFIX}{tool_name}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_preview(tool_name: str, arguments: Mapping[str, Any]) -> str:
    """``tool(name=value, ...)`` with credential-like values hidden and long ones cut."""
    parts = []
    for name, value in arguments.items():
        if _SECRET_NAME.search(name):
            shown = "•••"
        else:
            shown = _cut(json.dumps(value, ensure_ascii=False, default=str), _VALUE_LIMIT)
        parts.append(f"{name}={shown}")
    return _cut(f"{tool_name}({', '.join(parts)})", _SUMMARY_LIMIT).replace("`", "'")


def static_summary(tool_name: str, arguments: Mapping[str, Any]) -> str:
    """One line for the UI's list and the top of the task's page."""
    return f"MCP task · {call_preview(tool_name, arguments)}"


def static_details(
    *,
    task_id: str,
    tool_name: str,
    tool_version: str | None,
    created_at: datetime,
    ttl_ms: int,
    leg_queue: str,
) -> str:
    """The task's card (Temporal markdown) on its page in the UI."""
    expires = created_at + timedelta(milliseconds=ttl_ms)
    version = f" (version `{tool_version}`)" if tool_version else ""
    return "\n".join(
        [
            f"**MCP task** `{task_id}` (SEP-2663), tool **{tool_name}**{version}",
            "",
            f"* `ttlMs` {ttl_ms}: its client can read it until about "
            f"{expires:%Y-%m-%d %H:%M:%S} UTC",
            f"* tool legs run as activity `{tool_name}` on task queue `{leg_queue}`",
            "* current details: what it waits for; progress: the pending activity's heartbeat",
            f"* `fastmcp-temporal tasks show {task_id}`",
        ]
    )


def start_search_attributes(tool_name: str) -> TypedSearchAttributes:
    return TypedSearchAttributes(
        [
            SearchAttributePair(TOOL_NAME_ATTRIBUTE, tool_name),
            SearchAttributePair(TASK_STATUS_ATTRIBUTE, "working"),
        ]
    )


def is_missing_search_attribute(err: BaseException) -> bool:
    """Temporal's refusal of a start that names an unregistered search attribute."""
    return (
        isinstance(err, RPCError)
        and err.status == RPCStatusCode.INVALID_ARGUMENT
        and "search attribute" in err.message.lower()
    )


def quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def list_query(
    *,
    tool: str | None = None,
    status: str | None = None,
    task_queue: str | None = None,
    search_attributes: bool = True,
) -> str:
    """A visibility query for MCP tasks (``McpTask`` and ``McpTask:<tool>``).

    Without the search attributes, a tool filter uses the workflow type and a
    status filter the execution status (``working`` and ``input_required``
    are both ``Running`` then).
    """
    clauses = [f"WorkflowType STARTS_WITH {quoted(WORKFLOW_TYPE)}"]
    if tool is not None:
        if search_attributes:
            clauses.append(f"{TOOL_NAME_ATTRIBUTE.name} = {quoted(tool)}")
        else:
            clauses.append(f"WorkflowType = {quoted(workflow_type(tool))}")
    if status is not None:
        if status not in TASK_STATUSES:
            raise ValueError(f"Unknown status {status!r}: one of {', '.join(TASK_STATUSES)}")
        if search_attributes:
            clauses.append(f"{TASK_STATUS_ATTRIBUTE.name} = {quoted(status)}")
        else:
            clauses.append(f"ExecutionStatus = {quoted(_EXECUTION_STATUS[status])}")
    if task_queue is not None:
        clauses.append(f"TaskQueue = {quoted(task_queue)}")
    return " AND ".join(clauses)


_EXECUTION_STATUS = {
    "working": "Running",
    "input_required": "Running",
    "completed": "Completed",
    "failed": "Failed",
    "cancelled": "Canceled",
}
