"""SEP-2663 wire shapes and the protocol errors every ``tasks/*`` path shares.

The MCP SDK still ships the older (SEP-1686) task types, so the extension's own
shapes live here: a *flat* ``CreateTaskResult`` tagged ``resultType: "task"``,
the detailed task of ``tasks/get``, the two empty acks, and the request params.
Field names follow the spec (``ttlMs``, ``pollIntervalMs``); models are built by
Python name and dumped by alias.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastmcp.utilities.tasks import TASKS_EXTENSION_ID
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, RequestParams, Result
from mcp_types.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from fastmcp_temporal.workflows.models import ProgressReport, TaskStatus, TaskView

_MAX_ECHOED_ID = 80
_ENDED_WITHOUT_MESSAGE = frozenset({"completed", "cancelled"})
#: Statuses a task never leaves (SEP-2663).
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})


def iso(moment: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``, the form the spec's examples use."""
    return moment.isoformat().replace("+00:00", "Z")


class _TaskFields(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(serialization_alias="taskId")
    status: TaskStatus
    status_message: str | None = Field(default=None, serialization_alias="statusMessage")
    created_at: str = Field(serialization_alias="createdAt")
    last_updated_at: str = Field(serialization_alias="lastUpdatedAt")
    ttl_ms: int | None = Field(serialization_alias="ttlMs")
    poll_interval_ms: int | None = Field(default=None, serialization_alias="pollIntervalMs")


class CreateTaskResult(_TaskFields):
    """The answer to a ``tools/call`` that became a task."""

    result_type: Literal["task"] = Field(default="task", serialization_alias="resultType")
    #: Not on the wire: the run this call started (``None``: it found an idempotency
    #: key's existing task, which may run anywhere).
    _started_run_id: str | None = PrivateAttr(default=None)

    @property
    def started_run_id(self) -> str | None:
        return self._started_run_id


class GetTaskResult(_TaskFields):
    """``tasks/get``: the detailed task. ``resultType`` is ``complete`` whatever the status."""

    result_type: Literal["complete"] = Field(default="complete", serialization_alias="resultType")
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = Field(default=None, serialization_alias="inputRequests")
    #: A completed task's last progress report (``TaskView.final_progress``), read from
    #: the workflow's result by a waiting synchronous call; never on the wire.
    _final_progress: ProgressReport | None = PrivateAttr(default=None)

    @property
    def final_progress(self) -> ProgressReport | None:
        return self._final_progress

    @classmethod
    def from_view(
        cls,
        view: TaskView,
        status_message: str | None = None,
        message_changed_at: datetime | None = None,
    ) -> GetTaskResult:
        """The task as the workflow recorded it, with the running leg's message if any.

        ``lastUpdatedAt`` is the later of the workflow's last state change and
        the moment the leg's message changed: both are what a poll shows. A
        ``completed`` or ``cancelled`` task has no ``statusMessage``: what the
        workflow holds then is the body's last progress line, which describes
        work that is over (a ``failed`` task's message is its error).
        """
        last_updated_at = view.last_updated_at
        if message_changed_at is not None:
            last_updated_at = max(last_updated_at, message_changed_at)
        if status_message is None and view.status not in _ENDED_WITHOUT_MESSAGE:
            status_message = view.status_message
        task = cls(
            task_id=view.task_id,
            status=view.status,
            status_message=status_message,
            created_at=iso(view.created_at),
            last_updated_at=iso(last_updated_at),
            ttl_ms=view.ttl_ms,
            poll_interval_ms=view.poll_interval_ms,
            result=view.result if view.status == "completed" else None,
            error=view.error if view.status == "failed" else None,
            input_requests=view.input_requests if view.status == "input_required" else None,
        )
        task._final_progress = view.final_progress
        return task


class AckResult(Result):
    """The empty acknowledgement of ``tasks/update`` and ``tasks/cancel``."""

    result_type: Literal["complete"] = Field(default="complete", serialization_alias="resultType")


class TaskIdParams(RequestParams):
    """Params of ``tasks/get`` and ``tasks/cancel``."""

    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(alias="taskId")


class UpdateTaskParams(RequestParams):
    """Params of ``tasks/update``."""

    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] = Field(alias="inputResponses")


def missing_capability(message: str) -> MCPError:
    """``-32021``: the request did not declare the tasks extension."""
    return MCPError(
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=message,
        data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION_ID: {}}}},
    )


def task_not_found(task_id: str) -> MCPError:
    """The one ``-32602`` for unknown, expired and other callers' task ids.

    One message for all three, so nobody can tell "not yours" from "no such
    task", worded as ``fastmcp-tasks`` words it. Long ids are cut so the error
    never echoes a megabyte back.
    """
    shown = task_id if len(task_id) <= _MAX_ECHOED_ID else task_id[:_MAX_ECHOED_ID] + "…"
    return MCPError(code=INVALID_PARAMS, message=f"Task {shown} not found")


def invalid_params(message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message)
