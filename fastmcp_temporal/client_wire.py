"""The client side of the SEP-2663 wire: task shapes as received, ``tasks/*`` requests.

The server's models (``server.core.wire``) *produce* the wire (serialization
aliases); these *read* it (validation aliases: the SDK validates a claimed
result and a ``tasks/get`` answer by wire name). Each request carries the
current trace context, so the server's ``tasks/*`` spans nest under the
client's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import mcp_types
from fastmcp.client.telemetry import client_span
from fastmcp.telemetry import inject_trace_context
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
#: ``error.code`` of a ``tasks/*`` or ``tools/call`` that Temporal did not answer in
#: time; ``error.data.retryable`` says whether asking again is safe.
TEMPORAL_UNAVAILABLE = -32001
#: ``error.code`` of a ``tools/call`` that a front end being stopped did not finish:
#: a waiting call's task goes on (``error.data.taskId``; call again with the same
#: ``Idempotency-Key`` for its result), or a new call was not taken (call again).
SERVER_DRAINING = -32002
#: ``error.code`` of a ``tools/call`` that waited on a task whose body keeps failing
#: (a workflow task, an activity, a queue no worker serves): the task goes on retrying
#: (``error.data.taskId``; ``tasks/get`` it, or call again with the same ``Idempotency-Key``).
#: (Not ``-32003``: older SEP-2663 drafts used it for a missing client capability.)
TASK_STUCK = -32004
#: Where a ``tools/call`` names its idempotency key (``server.protocol.idempotency``):
#: the same key from the same caller answers with the task the first call created.
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
IDEMPOTENCY_KEY_META = "io.github.fastmcp-temporal/idempotencyKey"


def is_retryable_busy(err: MCPError) -> bool:
    """Whether the server says Temporal was too busy to answer and asking again is safe."""
    data = err.data
    return (
        err.code == TEMPORAL_UNAVAILABLE
        and isinstance(data, dict)
        and data.get("retryable") is True
    )


class _TaskFields(mcp_types.Result):
    """The task as the wire carries it (camelCase in, Python names out)."""

    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(alias="taskId")
    status: TaskStatus
    status_message: str | None = Field(default=None, alias="statusMessage")
    created_at: str = Field(alias="createdAt")
    last_updated_at: str = Field(alias="lastUpdatedAt")
    ttl_ms: int | None = Field(default=None, alias="ttlMs")
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")


class CreatedTask(_TaskFields):
    """The answer to a ``tools/call`` the server runs as a task."""

    result_type: Literal["task"] = Field(alias="resultType")


class TaskState(_TaskFields):
    """``tasks/get``: the task, with ``result`` / ``error`` / ``input_requests`` per status."""

    result_type: Literal["complete"] = Field(default="complete", alias="resultType")
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = Field(default=None, alias="inputRequests")


def _traced_meta() -> Any:
    """The current trace context, so the server's ``tasks/*`` spans nest under the client's."""
    return inject_trace_context(None)


class _TaskIdParams(mcp_types.RequestParams):
    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(serialization_alias="taskId")


class _UpdateParams(_TaskIdParams):
    input_responses: dict[str, Any] = Field(serialization_alias="inputResponses")


class _GetTask(mcp_types.Request[_TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: _TaskIdParams


class _UpdateTask(mcp_types.Request[_UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: _UpdateParams


class _CancelTask(mcp_types.Request[_TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: _TaskIdParams


# -- tasks/get, tasks/update, tasks/cancel ------------------------------------


async def get_task(session: ClientSession, task_id: str, timeout: float | None = None) -> TaskState:
    """``tasks/get``: the task's current state."""
    with client_span("tasks/get", "tasks/get", task_id):
        request = _GetTask(params=_TaskIdParams(task_id=task_id, meta=_traced_meta()))
        return await session.send_request(request, TaskState, request_read_timeout_seconds=timeout)


async def update_task(
    session: ClientSession,
    task_id: str,
    input_responses: Mapping[str, Any],
    timeout: float | None = None,
) -> None:
    """``tasks/update``: answer input requests by key (dicts or SDK result models)."""
    responses = {
        key: answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        if isinstance(answer, BaseModel)
        else answer
        for key, answer in input_responses.items()
    }
    with client_span("tasks/update", "tasks/update", task_id):
        params = _UpdateParams(task_id=task_id, input_responses=responses, meta=_traced_meta())
        await session.send_request(
            _UpdateTask(params=params), mcp_types.Result, request_read_timeout_seconds=timeout
        )


async def cancel_task(session: ClientSession, task_id: str, timeout: float | None = None) -> None:
    """``tasks/cancel``: ask the server to cancel the task (an ack, not the outcome)."""
    with client_span("tasks/cancel", "tasks/cancel", task_id):
        request = _CancelTask(params=_TaskIdParams(task_id=task_id, meta=_traced_meta()))
        await session.send_request(request, mcp_types.Result, request_read_timeout_seconds=timeout)
