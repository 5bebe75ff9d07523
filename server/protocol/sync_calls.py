"""Durable synchronous calls: a ``tools/call`` without the tasks opt-in, run as a task.

Most MCP hosts send plain ``tools/call`` requests. A ``task=True`` tool called
that way used to run inline in the front end (as in ``fastmcp-tasks``): no
workflow, lost with the process. Here such a call starts *the same task
workflow* a task-augmented call starts (``creation.create_task``: validation,
caller scope, idempotency key, quota, TTL, fairness, encryption, payload store,
metrics), and the request stays open until the task ends, then answers with
what the task holds:

- ``completed``: its ``CallToolResult`` as it is (content, structured content,
  ``isError`` and masking were decided by the leg, exactly as for a task);
- ``failed``: its JSON-RPC error;
- ``input_required``: on 2026-07-28 an MRTR ``InputRequiredResult`` whose
  sealed ``requestState`` names the task (``mrtr.ask``); the client's next
  ``tools/call`` with ``inputResponses`` and that state delivers the answers
  as the task's signal and waits again -- one workflow for the whole exchange.
  On 2025-11-25, which has no MRTR result, a client that declared what the
  question needs is asked live on the open request (``sync_questions``) and
  its answers go to the task. A client that cannot answer (2025-11-25 without
  the capability, or a 2026-07-28 client that did not declare all that the
  question needs): the task is cancelled (no owner is left to answer it) and
  the client gets what an inline call that asks gets.
- ``cancelled`` (by ``tasks/cancel`` or an operator): a ``ToolError``.

The wait is ``call_waits``: its end from one long poll, what its legs say
when they run here in-process, everything else from the front end's one
bounded read loop; progress and log lines relayed, kept alive through
silence, and answered ``-32002`` when the front end is stopped before the task
ends. ``notifications/cancelled`` for the request goes to ``peer_cancels``: a
person's cancel cancels the task, a host's timeout detaches it -- also when it
reaches another front end of the deployment: in a session any front end serves,
the task id is derived from the call (``live_calls``). A dropped connection (or
a stopping front end) leaves the work going on. Either way a host that gave up
leaves its task *undelivered* (``reattach``): the same call made again attaches
to it and answers its result without running the body again, as a retry with
the same ``Idempotency-Key`` does. A host whose limit is hard is answered just
before it (``early_answers``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Awaitable
from typing import Any

import anyio
import mcp_types
from fastmcp.exceptions import ToolError
from fastmcp.server.context import Context
from fastmcp.server.dependencies import get_http_request
from fastmcp.server.extensions import ToolCallContinuation, ToolCallOutcome
from fastmcp.tools.base import Tool, ToolResult
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from temporalio.exceptions import WorkflowAlreadyStartedError

from fastmcp_temporal import _compat
from fastmcp_temporal.activities.input_capabilities import undeclared
from fastmcp_temporal.activities.tool_leg import registered_component
from fastmcp_temporal.server.core import metrics
from fastmcp_temporal.server.core.scope import task_scope
from fastmcp_temporal.server.core.wire import TERMINAL_STATUSES, GetTaskResult
from fastmcp_temporal.server.protocol import mrtr
from fastmcp_temporal.server.protocol.call_waits import CallWait, WaitingCalls
from fastmcp_temporal.server.protocol.creation import create_task, declared_capabilities
from fastmcp_temporal.server.protocol.early_answers import answer_in_s, still_running
from fastmcp_temporal.server.protocol.live_request import needs_live_request
from fastmcp_temporal.server.protocol.peer_cancels import peer_cancel
from fastmcp_temporal.server.protocol.reattach import Delivery, delivery_for, undelivered_task
from fastmcp_temporal.server.protocol.sync_questions import ask_live, can_ask_live
from fastmcp_temporal.server.protocol.temporal_busy import temporal_busy_as_error
from fastmcp_temporal.server.tasks.engine import TaskEngine
from fastmcp_temporal.server.temporal.workflow_tools import spec_for
from fastmcp_temporal.timing import TICK_S

logger = logging.getLogger(__name__)
#: How often a waiting 2025-xx call looks whether its client went away: a model asks
#: again after a turn of its own (seconds), and each look costs ~40 µs of CPU
#: (``bench/investigations/2026-12-05-closed-stream-watch``).
STREAM_CHECK_S = 2 * TICK_S


async def call_durably(
    waits: WaitingCalls,
    tool: Tool,
    params: mcp_types.CallToolRequestParams,
    context: Context,
    call_next: ToolCallContinuation,
) -> ToolCallOutcome:
    """Start (or attach to, or answer) the call's task and answer with how it ended.

    A body that needs the live request (``live_request``) runs inline instead.
    """
    component = await registered_component(context.fastmcp, tool)
    if needs_live_request(component):
        return await call_next()
    calls = waits.calls
    # While it waits, this front end holds the call: a cancel of it is the SDK's to see here.
    holding = (
        calls.holding(_session_of(context), str(context.request_id))
        if calls is not None
        else contextlib.nullcontext()
    )
    with holding:
        call_task_id = _call_task_id(waits, context)
        workflow_tool = spec_for(component) is not None
        return await _durably(waits, tool, params, context, call_task_id, workflow_tool)


async def _durably(
    waits: WaitingCalls,
    tool: Tool,
    params: mcp_types.CallToolRequestParams,
    context: Context,
    call_task_id: str | None,
    workflow_tool: bool,
    *,
    attach: bool = True,
) -> ToolCallOutcome:
    """``attach=False``: start a new task even if a host gave one up (``reattach``)."""
    engine = waits.engine
    scope = task_scope()
    arguments = dict(params.arguments or {})
    delivery = delivery_for(engine, tool.name, tool.version, arguments, context, scope=scope)
    began = asyncio.get_running_loop().time()
    answer_in = answer_in_s(context, delivery, waits.host_limits)
    answer_by = began + answer_in if answer_in is not None else None
    async with waits.wait_for(context) as wait:
        wait.workflow_tool = workflow_tool
        wait.attaches_again = delivery.call_key is not None
        run_id: str | None = None
        view: GetTaskResult | None = None
        request_state = context.request_state
        if request_state is not None and mrtr.is_ours(request_state):
            answer_by = None  # an answer to a question: its host is a 2026-07-28 client
            with metrics.request("tools/call"), temporal_busy_as_error("tools/call"):
                task_id = mrtr.resumed_task(request_state, scope=scope, tool_name=tool.name)
                wait.listen(task_id, scope)
                await wait.resuming()
                await mrtr.answer(engine, task_id, context.input_responses, scope=scope)
        else:
            if attach:
                await waits.fates.given_up(delivery.call_key)
                with temporal_busy_as_error("tools/call"):
                    view = await undelivered_task(engine, delivery, scope)
            if view is not None:  # a host gave this call's task up: answer from it
                task_id = view.task_id
                wait.listen(task_id, scope)
            else:
                # Measured as a task's creation; the wait below is not part of it.
                with metrics.creating(tool.name), temporal_busy_as_error("tools/call"):
                    try:
                        created = await create_task(
                            engine,
                            tool,
                            arguments,
                            context,
                            session_bound_keys=False,
                            before_start=lambda task_id: wait.listen(task_id, scope),
                            task_id=call_task_id,
                            memo=delivery.memo,
                        )
                    except WorkflowAlreadyStartedError:
                        raise MCPError(
                            code=mcp_types.INVALID_REQUEST,
                            message=f"Request id {context.request_id} was already used in "
                            "this session: a new request needs a new id",
                        ) from None
                    task_id, run_id = created.task_id, created.started_run_id
                    delivery.of_task(task_id, created.created_at, created.ttl_ms)
                    wait.listen(task_id, scope)  # an idempotency key's existing task: from now
                    if created.status != "working":  # that task asks, or has ended
                        view = await engine.get(task_id, scope)
        while True:
            if view is None or not _answerable(view):
                view = await _waited(waits, wait, context, run_id, delivery, answer_by)
            if view is None:  # the host's limit is near, or it left: answer now, the work goes on
                waited = asyncio.get_running_loop().time() - began
                return still_running(tool.name, task_id, waited, keyed=delivery.keyed)
            questions = view.input_requests or {}
            if view.status != "input_required" or not can_ask_live(context, questions):
                break
            # 2025-11-25: asked live on this request, answered into the task (here, or
            # through another front end: ``None``); then wait again.
            asking = ask_live(context, engine, view, scope, waits.calls)
            answers = await wait.guard(
                _cancelling_on_failure(engine, task_id, scope, context, asking)
            )
            if answers is not None:
                with temporal_busy_as_error("tasks/update"):
                    await engine.update(task_id, scope, answers)
            view = None
    with temporal_busy_as_error("tools/call"):
        if view.status in TERMINAL_STATUSES and not await delivery.take(engine):
            # Another call that attached to this task delivered its result first.
            return await _durably(
                waits, tool, params, context, call_task_id, workflow_tool, attach=False
            )
        return await _answer(engine, view, scope, tool.name, context)


def _session_of(context: Context) -> str | None:
    try:
        return context.session_id
    except RuntimeError:
        return None


def _call_task_id(waits: WaitingCalls, context: Context) -> str | None:
    """A task id any front end computes from the call, in a session any front end serves
    (its cancel may reach another one: ``peer_cancels``); else ``None``, a fresh id."""
    if waits.calls is None:
        return None
    sealed = waits.calls.sealed_session(_session_of(context))
    if sealed is None:
        return None
    return waits.calls.call_task_id(sealed, task_scope(), str(context.request_id))


def _answerable(view: GetTaskResult) -> bool:
    return view.status not in ("working", "input_required") or bool(view.input_requests)


async def _waited(
    waits: WaitingCalls,
    wait: CallWait,
    context: Context,
    run_id: str | None,
    delivery: Delivery,
    answer_by: float | None,
) -> GetTaskResult | None:
    """The task once it ends or asks; ``None`` at ``answer_by`` (a host's hard limit is near)
    or once the client closed the call's stream -- then the task is recorded undelivered.

    If the client cancels the request, ``peer_cancels`` decides what becomes of the task;
    if nobody is left to receive the answer (a dropped connection, a stopping front
    end), the task is recorded as undelivered, so that the call made again attaches.
    """
    engine = waits.engine
    with waits.cancel_reasons.expecting(context) as cancel:
        try:
            with anyio.CancelScope(deadline=answer_by if answer_by is not None else math.inf) as by:
                closing = asyncio.ensure_future(_cancel_when_stream_closes(context, by))
                try:
                    return await wait.until_answerable(run_id)
                finally:
                    closing.cancel()
            # The host's hard limit is near, or it closed the call's stream: answer now.
            await delivery.given_up(engine)
            return None
        except BaseException:
            assert wait.task_id is not None
            with anyio.CancelScope(shield=True), waits.fates.giving_up(delivery.call_key):
                if _compat.peer_cancelled(context):
                    reason = await cancel.reason()
                    try:
                        await peer_cancel(engine, wait.task_id, task_scope(), reason)
                    except Exception:  # the request ends as it does; the task stays as it is
                        logger.warning("Cancelling task %s failed", wait.task_id, exc_info=True)
                else:
                    await delivery.given_up(engine)
            raise


async def _cancel_when_stream_closes(context: Context, scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` once the client closed this request's HTTP stream.

    On 2025-xx the SDK keeps a request's handler running when its SSE stream
    closes without a cancel (for the client to resume it with ``Last-Event-ID``):
    a host that gave up that way (Copilot CLI) would leave the call waiting, and
    its task delivered to nobody. Every ``STREAM_CHECK_S`` the request is asked
    whether its client went away (Starlette's ``is_disconnected``: no I/O, a look
    at the connection's state); on 2026-07-28 a closed stream cancels the handler
    itself.
    """
    request_context = context.request_context
    if request_context is None or request_context.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return  # 2026-07-28: a closed stream cancels the handler
    try:
        request = get_http_request()
    except RuntimeError:
        return  # not HTTP: nothing to watch
    while not await request.is_disconnected():
        await asyncio.sleep(STREAM_CHECK_S)
    scope.cancel()


async def _cancelling_on_failure(
    engine: TaskEngine,
    task_id: str,
    scope: str | None,
    context: Context,
    asking: Awaitable[dict[str, Any] | None],
) -> dict[str, Any] | None:
    """The client's answers; a client that fails, refuses or cancels leaves no parked task.

    A connection that drops while asked (or a front end that stops) leaves the
    task parked: a retry with the call's idempotency key attaches and asks again.
    """
    try:
        return await asking
    except BaseException as err:
        if _compat.peer_cancelled(context):
            with anyio.CancelScope(shield=True):
                await peer_cancel(engine, task_id, scope, None)
        elif not isinstance(err, asyncio.CancelledError):
            with anyio.CancelScope(shield=True):
                await engine.cancel(task_id, scope)
        raise


async def _answer(
    engine: TaskEngine, view: GetTaskResult, scope: str | None, tool_name: str, context: Context
) -> ToolCallOutcome:
    """What the call answers for the task as ``view`` shows it (see the module docstring)."""
    if view.status == "completed" and view.result is not None:
        return ToolResult.from_mcp_result(mcp_types.CallToolResult.model_validate(view.result))
    if view.status == "failed":
        error = view.error or {}
        raise MCPError(
            code=int(error.get("code", mcp_types.INTERNAL_ERROR)),
            message=str(error.get("message", view.status_message or "Task failed")),
            data=error.get("data"),
        )
    if view.status == "input_required":
        request_context = context.request_context
        modern = (
            request_context is not None
            and request_context.protocol_version in MODERN_PROTOCOL_VERSIONS
        )
        if not modern or undeclared(view.input_requests or {}, declared_capabilities(context)):
            # Nobody can answer it (no MRTR on this wire, or a client that did not
            # declare all that it needs): end it rather than leave it parked, ownerless,
            # until its TTL. The client gets what an inline call that asks gets.
            await engine.cancel(view.task_id, scope)
        return mrtr.ask(view, scope=scope, tool_name=tool_name)
    raise ToolError(f"The task running this call of {tool_name!r} was cancelled")
