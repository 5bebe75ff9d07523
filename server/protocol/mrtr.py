"""MRTR first, then the task (SEP-2663 §"Composition with Multi Round-Trip Requests").

SEP-2663 says a server SHOULD resolve multi-round-trip input *synchronously*
before it answers with a ``CreateTaskResult``. Deciding "task or not" before the
body runs cannot do that, so for the tools configured with
``TemporalTasks(mrtr_first_tools=...)`` creation works like this -- without
giving up durability, because the workflow exists from the first moment:

1. Round 1 (no ``requestState``): start the task's workflow, then watch it for
   ``mrtr_window``. If its first leg asks for input, answer the ``tools/call``
   with an ``InputRequiredResult`` carrying those requests and a
   ``requestState`` that names the (already durable) task. If it finishes,
   answer with its result inline. Otherwise answer with the task.
2. Round 2 (``inputResponses`` + our ``requestState``): deliver the answers to
   that task exactly as ``tasks/update`` would and answer with the task.

The ``requestState`` is sealed by FastMCP's request-state boundary (integrity
and audience; share ``request_state_security`` keys across replicas), and what
it carries is bound to the caller's scope, the tool and an expiry: a state
forged, altered, replayed by another caller or for another tool is rejected
and no task is touched. Replaying one's own state is harmless: answers to keys
no longer outstanding are ignored and the same task comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from datetime import timedelta
from typing import Any

import mcp_types
from fastmcp import Context
from fastmcp.tools.base import InputRequiredToolResult, Tool, ToolResult
from pydantic import BaseModel, TypeAdapter, ValidationError

from fastmcp_temporal.activities.input_capabilities import undeclared
from fastmcp_temporal.server.core.scope import task_scope
from fastmcp_temporal.server.core.wire import CreateTaskResult, GetTaskResult, invalid_params
from fastmcp_temporal.server.protocol.creation import create_task, declared_capabilities
from fastmcp_temporal.server.tasks.engine import TaskEngine
from fastmcp_temporal.server.tasks.task_watch import watch

_STATE_PREFIX = "fastmcp-temporal.mrtr:"
_INPUT_REQUEST = TypeAdapter(mcp_types.InputRequest)


class PendingTask(BaseModel):
    """What an MRTR ``requestState`` refers to: one durable task of one caller."""

    task_id: str
    scope: str
    tool: str
    expires_at: float


def scope_digest(scope: str | None) -> str:
    return hashlib.sha256((scope or "").encode()).hexdigest()


def is_ours(request_state: str | None) -> bool:
    return bool(request_state) and request_state.startswith(_STATE_PREFIX)  # type: ignore[union-attr]


async def first_round(
    engine: TaskEngine,
    created: CreateTaskResult,
    *,
    scope: str | None,
    tool_name: str,
    window: timedelta,
    capabilities: dict[str, Any] | None = None,
) -> CreateTaskResult | ToolResult:
    """Watch a just-created task for ``window``; an early ask or result goes back inline.

    The watch long-polls the task's history (``task_watch``): no read happens
    until the workflow records something, and the first leg's outcome is seen
    as soon as Temporal has it. With no worker to take the task in time, the
    client gets the task. An ask the client did not declare ``capabilities``
    for is never sent: the client gets the parked task instead, whose
    ``statusMessage`` says why (see ``activities.input_capabilities``).
    """
    with contextlib.suppress(TimeoutError):
        async with (
            asyncio.timeout(window.total_seconds()),
            contextlib.aclosing(watch(engine, created.task_id, scope)) as views,
        ):
            async for view in views:
                if view.status == "input_required" and view.input_requests:
                    if undeclared(view.input_requests, capabilities):
                        return _task_now(view)
                    return ask(view, scope=scope, tool_name=tool_name)
                if view.status == "completed" and view.result is not None:
                    result = mcp_types.CallToolResult.model_validate(view.result)
                    return ToolResult.from_mcp_result(result)
                if view.status != "working":
                    break
    return created


def ask(view: GetTaskResult, *, scope: str | None, tool_name: str) -> InputRequiredToolResult:
    """The task's questions as an ``InputRequiredResult`` whose ``requestState`` names it."""
    pending = PendingTask(
        task_id=view.task_id,
        scope=scope_digest(scope),
        tool=tool_name,
        expires_at=time.time() + (view.ttl_ms or 0) / 1000,
    )
    return InputRequiredToolResult(
        mcp_types.InputRequiredResult(
            input_requests={
                key: _INPUT_REQUEST.validate_python(request)
                for key, request in (view.input_requests or {}).items()
            },
            request_state=_STATE_PREFIX + pending.model_dump_json(),
        )
    )


async def later_round(
    engine: TaskEngine,
    request_state: str,
    input_responses: mcp_types.InputResponses | None,
    *,
    scope: str | None,
    tool_name: str,
) -> CreateTaskResult:
    """Deliver round-2 answers to the task named by ``request_state``; answer with the task."""
    task_id = await deliver(
        engine, request_state, input_responses, scope=scope, tool_name=tool_name
    )
    return _task_now(await engine.get(task_id, scope))


async def deliver(
    engine: TaskEngine,
    request_state: str,
    input_responses: mcp_types.InputResponses | None,
    *,
    scope: str | None,
    tool_name: str,
) -> str:
    """Check ``request_state`` is this caller's for this tool, signal the answers; the task id.

    Anything forged, altered, expired, another caller's or another tool's is
    ``-32602`` and signals nothing.
    """
    task_id = resumed_task(request_state, scope=scope, tool_name=tool_name)
    await answer(engine, task_id, input_responses, scope=scope)
    return task_id


def resumed_task(request_state: str, *, scope: str | None, tool_name: str) -> str:
    """The task ``request_state`` names, if it is this caller's for this tool (else ``-32602``)."""
    try:
        pending = PendingTask.model_validate_json(request_state.removeprefix(_STATE_PREFIX))
    except ValidationError:
        raise invalid_params("Invalid requestState") from None
    if (
        pending.scope != scope_digest(scope)
        or pending.tool != tool_name
        or pending.expires_at < time.time()
    ):
        raise invalid_params("Invalid requestState")
    return pending.task_id


async def answer(
    engine: TaskEngine,
    task_id: str,
    input_responses: mcp_types.InputResponses | None,
    *,
    scope: str | None,
) -> None:
    """The client's answers to ``task_id``'s questions, as its ``tasks/update``."""
    responses: dict[str, Any] = {
        key: response.model_dump(by_alias=True, mode="json", exclude_none=True)
        for key, response in (input_responses or {}).items()
    }
    await engine.update(task_id, scope, responses)


def _task_now(view: GetTaskResult) -> CreateTaskResult:
    """The task as ``tools/call`` answers it, in the state ``view`` shows."""
    return CreateTaskResult(
        task_id=view.task_id,
        status=view.status,
        status_message=view.status_message,
        created_at=view.created_at,
        last_updated_at=view.last_updated_at,
        ttl_ms=view.ttl_ms,
        poll_interval_ms=view.poll_interval_ms,
    )


async def create_task_mrtr_first(
    engine: TaskEngine,
    tool: Tool,
    params: mcp_types.CallToolRequestParams,
    context: Context,
    *,
    window: timedelta,
) -> CreateTaskResult | ToolResult:
    """``tools/call`` for a tool in ``mrtr_first_tools``: round one or a later round."""
    request_state = context.request_state
    if request_state is not None and is_ours(request_state):
        return await later_round(
            engine, request_state, context.input_responses, scope=task_scope(), tool_name=tool.name
        )
    created = await create_task(engine, tool, dict(params.arguments or {}), context)
    return await first_round(
        engine,
        created,
        scope=task_scope(),
        tool_name=tool.name,
        window=window,
        capabilities=declared_capabilities(context),
    )
