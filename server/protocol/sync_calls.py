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

The wait is ``task_watch.watch``: a long poll on the workflow's history, no
``tasks/get`` polling. A call whose task runs in this process's worker first waits on
the close event alone (``_ended_here``: one read); with a ``progressToken``, only while
the task's legs run here too, and tell the wait of their progress in-process (a short
tool's local legs always do; a default tool's activity legs must be seen to begin
here). What legs running here log goes to the client as ``notifications/message``, as
inline (``sync_progress.HintRelay``).
``notifications/cancelled`` for the request cancels the task; a dropped
connection (or a stopping front end) does not -- the work goes on, and a retry
with the same ``Idempotency-Key`` attaches to it and answers its result without
running the body again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any

import anyio
import mcp_types
from fastmcp.exceptions import ToolError
from fastmcp.server.context import Context
from fastmcp.server.extensions import ToolCallContinuation, ToolCallOutcome
from fastmcp.tools.base import Tool, ToolResult
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from temporalio.service import RPCError

from fastmcp_temporal import _compat
from fastmcp_temporal.activities.input_capabilities import undeclared
from fastmcp_temporal.activities.tool_leg import registered_component
from fastmcp_temporal.server.core import metrics
from fastmcp_temporal.server.core.scope import task_scope
from fastmcp_temporal.server.core.wire import TERMINAL_STATUSES, GetTaskResult
from fastmcp_temporal.server.protocol import mrtr
from fastmcp_temporal.server.protocol.creation import create_task, declared_capabilities
from fastmcp_temporal.server.protocol.live_request import needs_live_request
from fastmcp_temporal.server.protocol.sync_progress import (
    HintRelay,
    Relayed,
    progress_token,
    relay_progress,
    send_final,
)
from fastmcp_temporal.server.protocol.sync_questions import ask_live, can_ask_live
from fastmcp_temporal.server.protocol.temporal_busy import is_transient, temporal_busy_as_error
from fastmcp_temporal.server.tasks.engine import LegPlacement, TaskEngine, workflow_id_for
from fastmcp_temporal.server.tasks.task_watch import HistoryTail, SharedTail, ended, watch
from fastmcp_temporal.workflows import park_hints

#: How long the wait pauses after Temporal failed a read transiently.
TRANSIENT_RETRY_S = 1.0
#: How long a wait for a task run here reads only its close event (``_ended_here``): a
#: question of a task that parked on another worker (no hint reaches this process)
#: reaches the client at most this late; a task that runs longer costs one read more.
END_HERE_WAIT_S = 5.0
#: How long a one-read wait that relays progress waits for a leg to begin here when
#: legs only mostly run here (activity legs): a leg run by another worker reports
#: where only the full wait reads, so the wait becomes the full wait after this (its
#: first reports reach the client at most this late). Long enough for a loaded
#: machine: a leg that begins here later costs the call the full wait's reads.
LEG_HERE_WAIT_S = 2.0


async def call_durably(
    engine: TaskEngine,
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
    legs: LegPlacement = "elsewhere"
    run_id: str | None = None
    scope = task_scope()
    seen: GetTaskResult | None = None
    request_state = context.request_state
    if request_state is not None and mrtr.is_ours(request_state):
        with metrics.request("tools/call"), temporal_busy_as_error("tools/call"):
            task_id = await mrtr.deliver(
                engine, request_state, context.input_responses, scope=scope, tool_name=tool.name
            )
    else:
        # Measured as a task's creation; the wait below is not part of it.
        with metrics.creating(tool.name), temporal_busy_as_error("tools/call"):
            created = await create_task(
                engine, tool, dict(params.arguments or {}), context, session_bound_keys=False
            )
        task_id, run_id = created.task_id, created.started_run_id
        # A task found by its idempotency key may run anywhere, where no hint comes from.
        if run_id is not None:
            legs = engine.where_legs_run(tool.name, tool_timeout_s=component.timeout)
        if created.status == "working":
            # What the start (or the key's existing task) answered: the wait's first
            # read would find the same, so it is skipped (``watch(started=True)``).
            seen = GetTaskResult.model_validate(created.model_dump(exclude={"result_type"}))
    while True:
        view = await _wait(engine, task_id, scope, context, seen, legs=legs, run_id=run_id)
        seen = None
        questions = view.input_requests or {}
        if view.status != "input_required" or not can_ask_live(context, questions):
            break
        # 2025-11-25: asked live on this request, answered into the task; then wait again.
        asking = ask_live(context, questions)
        answers = await _cancelling_on_failure(engine, task_id, scope, context, asking)
        with temporal_busy_as_error("tasks/update"):
            await engine.update(task_id, scope, answers)
    with temporal_busy_as_error("tools/call"):
        return await _answer(engine, view, scope, tool.name, context)


async def _cancelling_on_failure(
    engine: TaskEngine,
    task_id: str,
    scope: str | None,
    context: Context,
    asking: Awaitable[dict[str, Any]],
) -> dict[str, Any]:
    """The client's answers; a client that fails, refuses or cancels leaves no parked task.

    A connection that drops while asked (or a front end that stops) leaves the
    task parked: a retry with the call's idempotency key attaches and asks again.
    """
    try:
        return await asking
    except BaseException as err:
        if not isinstance(err, asyncio.CancelledError) or _compat.peer_cancelled(context):
            with anyio.CancelScope(shield=True):
                await engine.cancel(task_id, scope)
        raise


async def _wait(
    engine: TaskEngine,
    task_id: str,
    scope: str | None,
    context: Context,
    seen: GetTaskResult | None = None,
    *,
    legs: LegPlacement = "elsewhere",
    run_id: str | None = None,
) -> GetTaskResult:
    """The task once it ends or asks, relaying its progress; cancelled if the client cancels.

    ``seen``: a ``working`` view of the task this request already has (its creation).
    ``legs``: where the task's legs run (``TaskEngine.where_legs_run``).
    ``run_id``: the run this call started, if it did.
    """
    workflow_id = workflow_id_for(task_id, scope, engine.scope_secret)
    relayed = Relayed()
    wants_progress = progress_token(context) is not None
    # With a worker here, legs may run here: they tell this request what they log and report.
    hints = (
        HintRelay(workflow_id, context, relayed, progress=wants_progress)
        if engine.eager_start
        else None
    )
    relay: asyncio.Task[None] | None = None
    shared: SharedTail | None = None

    async def ending(view: GetTaskResult) -> GetTaskResult:
        # The history relay stops before anything yields (it would read once more);
        # what the legs said before the end goes next, then the last report if newer.
        nonlocal relay
        if relay is not None:
            await _stop(relay)
            relay = None
        if hints is not None:
            await hints.finish()
        if wants_progress:
            await send_final(context, relayed, view.final_progress)
        return view

    try:
        if seen is not None and hints is not None and (legs != "elsewhere" or not wants_progress):
            # Legs only mostly here must be seen to begin here, or their reports would wait.
            must_see_leg = wants_progress and legs == "mostly here"
            leg_here = hints.leg_here if must_see_leg else None
            view = await _ended_here(engine, workflow_id, task_id, scope, run_id, leg_here)
            if view is not None:
                return await ending(view)
        if wants_progress:
            # The relay and the wait read one history: one long poll at a time serves both.
            shared = SharedTail(HistoryTail(engine, workflow_id))
            relay = asyncio.create_task(
                relay_progress(engine, workflow_id, context, tail=shared.reader(), relayed=relayed)
            )
        return await ending(await _until_answerable(engine, task_id, scope, seen, shared))
    except BaseException:
        if _compat.peer_cancelled(context):
            # The client cancelled this request: the task is its work, cancel it too.
            with anyio.CancelScope(shield=True):
                await engine.cancel(task_id, scope)
        raise
    finally:
        if hints is not None:
            hints.close()
        if relay is not None:
            await _stop(relay)
        if shared is not None:
            await shared.close()


async def _stop(relay: asyncio.Task[None]) -> None:
    relay.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await relay


async def _ended_here(
    engine: TaskEngine,
    workflow_id: str,
    task_id: str,
    scope: str | None,
    run_id: str | None,
    leg_here: asyncio.Event | None = None,
) -> GetTaskResult | None:
    """The task's end in one history read, if it ends soon here; ``None``: wait as usual.

    This front end hosts a worker and started the task eagerly, so the task's
    workflow tasks run here. The wait long-polls for the close event alone
    (``task_watch.ended``, one read, where the full wait reads the history's first page
    and then each batch of events: 1.8 reads per call of a short tool, 4.4 of a
    default one). A task that parks here says so at once (``park_hints``): the full
    wait then reads its questions. One that parks on another worker, or is still
    running after ``END_HERE_WAIT_S``, is left to the full wait from then on.
    ``leg_here``: set when a leg of the task begins here; if given, a task whose leg
    does not begin here within ``LEG_HERE_WAIT_S`` is left to the full wait too.
    """
    parked = park_hints.when_parked(workflow_id)
    closing = asyncio.ensure_future(ended(engine, task_id, scope, run_id=run_id))
    waits: set[asyncio.Future[Any]] = {parked, closing}
    if leg_here is not None:
        waits.add(asyncio.ensure_future(_unless_begun(leg_here)))
    try:
        done, _ = await asyncio.wait(
            waits, timeout=END_HERE_WAIT_S, return_when=asyncio.FIRST_COMPLETED
        )
        if closing not in done:
            return None
        return closing.result()
    except RPCError:
        return None  # the full wait reads again, and waits out what is transient
    finally:
        park_hints.forget(workflow_id, parked)
        for waiting in waits - {parked}:
            if not waiting.done():
                waiting.cancel()
                with contextlib.suppress(asyncio.CancelledError, RPCError):
                    await waiting


async def _unless_begun(leg_here: asyncio.Event) -> None:
    """Return if no leg begins here within ``LEG_HERE_WAIT_S``; once one has, never."""
    try:
        await asyncio.wait_for(leg_here.wait(), LEG_HERE_WAIT_S)
    except TimeoutError:
        return
    await asyncio.Event().wait()


async def _until_answerable(
    engine: TaskEngine,
    task_id: str,
    scope: str | None,
    seen: GetTaskResult | None = None,
    shared: SharedTail | None = None,
) -> GetTaskResult:
    """The task once it ended or asks; a Temporal that is briefly away only delays it.

    The task exists and runs on without this request, so a transient failure of a
    read is waited out (the client's own timeout or cancel bounds the wait).
    """
    while True:
        # A shared tail's reader is made before the watch reads: no answer falls between.
        tail = shared.reader() if shared is not None else None
        watching = watch(engine, task_id, scope, seen=seen, started=seen is not None, tail=tail)
        seen = None  # a watch again after a failed read starts from a fresh read
        try:
            async with contextlib.aclosing(watching) as views:
                async for view in views:
                    if view.status in TERMINAL_STATUSES or (
                        view.status == "input_required" and view.input_requests
                    ):
                        return view
        except RPCError as err:
            if not is_transient(err):
                raise
            await asyncio.sleep(TRANSIENT_RETRY_S)
        finally:
            if shared is not None and tail is not None:
                shared.drop(tail)


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
