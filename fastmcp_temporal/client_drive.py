"""Driving a task to its end from the client: poll, answer input, ride out a busy server.

``client.call_tool`` on a task tool (``TasksClientExtension``) and ``ToolTask.result``
both drive a task this way, so they behave alike: polls back off from
``FIRST_POLL_S`` to the task's ``pollIntervalMs`` (short tasks end fast, long ones
are not hammered), input requests are answered with the client's own handlers
in one ``tasks/update``, and a server answering that Temporal was too busy is
asked again until the caller's deadline (``BUSY_PATIENCE_S`` without one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, cast

import mcp_types
from fastmcp.exceptions import ToolError
from mcp.client.session import ClientRequestContext, ClientSession, ElicitationFnT
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from fastmcp_temporal.client_wire import TaskState, get_task, is_retryable_busy, update_task

TERMINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
#: The first poll comes this soon; the delay doubles up to the task's ``pollIntervalMs``.
FIRST_POLL_S = 0.02
#: Between two polls when the server names no ``pollIntervalMs`` (the client's own pace).
DEFAULT_POLL_S = 1.0
#: With no deadline, a request the server could not pass to a busy Temporal is
#: asked again for this long before its error is raised.
BUSY_PATIENCE_S = 60.0
#: The first wait before asking again; it doubles up to ``DEFAULT_POLL_S``.
FIRST_BUSY_RETRY_S = 0.1
_T = TypeVar("_T")
_NO_HANDLER = (
    "requires input but the client has no elicitation handler; "
    "pass elicitation_handler= to Client() to drive tasks that ask for input."
)
#: The input a task may ask for, and that this client answers.
_ANSWERABLE = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
_INPUT_REQUEST: TypeAdapter[mcp_types.InputRequest] = TypeAdapter(mcp_types.InputRequest)


class Deadline:
    """What is left of a drive's ``timeout`` (``None``: unbounded); past it, ``TimeoutError``."""

    def __init__(self, seconds: float | None) -> None:
        loop = asyncio.get_running_loop()
        self._end = None if seconds is None else loop.time() + seconds
        self._loop = loop

    def left(self, what: str) -> float | None:
        if self._end is None:
            return None
        remaining = self._end - self._loop.time()
        if remaining <= 0:
            raise TimeoutError(what)
        return remaining


async def asking_again_while_busy(
    call: Callable[[], Awaitable[_T]], deadline: Deadline, what: str
) -> _T:
    """``call()``, repeated while the server answers that Temporal was too busy
    (``-32001`` with ``retryable``): a durable task outlives a slow moment of
    its backend, so the drive should too, up to its own deadline."""
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + BUSY_PATIENCE_S
    delay = FIRST_BUSY_RETRY_S
    while True:
        try:
            return await call()
        except MCPError as err:
            if not is_retryable_busy(err):
                raise
            left = deadline.left(what)
            if left is None and loop.time() >= give_up_at:
                raise
            await asyncio.sleep(delay if left is None else min(delay, left))
            delay = min(delay * 2, DEFAULT_POLL_S)


def _next_delay(state: TaskState, delay: float) -> float:
    """Back off from ``FIRST_POLL_S`` up to the task's ``pollIntervalMs``: short tasks end fast."""
    ceiling = state.poll_interval_ms / 1000 if state.poll_interval_ms else DEFAULT_POLL_S
    return min(delay * 2, max(ceiling, FIRST_POLL_S))


async def poll_until(
    session: ClientSession,
    task_id: str,
    *,
    until: Sequence[str] = tuple(TERMINAL_STATUSES),
    timeout: float | None = None,
    elicitation_callback: ElicitationFnT | None = None,
) -> TaskState:
    """Poll ``tasks/get`` until the status is in ``until``; answer input if given a callback.

    ``timeout`` bounds the whole drive (polls, sleeps and answers), as a
    synchronous call's timeout bounds the call.
    """
    deadline = Deadline(timeout)
    what = f"Task {task_id} did not reach {' / '.join(until)} within {timeout}s"
    delay = FIRST_POLL_S
    while True:
        state = await asking_again_while_busy(
            lambda: get_task(session, task_id, deadline.left(what)), deadline, what
        )
        if state.status in until:
            return state
        if state.status == "input_required" and elicitation_callback is not None:
            await _answer(session, state, elicitation_callback, deadline, what)
            delay = FIRST_POLL_S
            continue
        left = deadline.left(what)
        await asyncio.sleep(delay if left is None else min(delay, left))
        delay = _next_delay(state, delay)


async def _answer(
    session: ClientSession,
    state: TaskState,
    callback: ElicitationFnT,
    deadline: Deadline,
    what: str,
) -> None:
    """Answer every input the task asks for, in one update.

    Elicitation goes to ``callback`` (the handler the extension was bound to; with
    ``session_elicitation``, the session's own); sampling and roots to the
    session's own callbacks (a FastMCP ``Client``'s ``sampling_handler`` /
    ``roots``), as the SDK routes a synchronous ``InputRequiredResult``. A handler
    that declines (``ErrorData``) raises ``ToolError``: an input response has no
    error variant on the wire, so the task stays ``input_required`` until it is
    cancelled or expires.
    """
    responses: dict[str, Any] = {}
    for key, payload in (state.input_requests or {}).items():
        method = payload.get("method") if isinstance(payload, dict) else None
        if method not in _ANSWERABLE:
            raise ToolError(
                f"Task {state.task_id} asks for {method!r}, which this client cannot answer"
            )
        request = _INPUT_REQUEST.validate_python(payload)
        context = ClientRequestContext(session=session, request_id=f"task-{state.task_id}-{key}")
        if isinstance(request, mcp_types.ElicitRequest) and callback is not session_elicitation:
            if callback is no_elicitation_handler:  # as fastmcp-tasks' client half says it
                raise ToolError(f"Task {state.task_id} {_NO_HANDLER}")
            pending = callback(context, request.params)
        else:
            pending = session.dispatch_input_request(context, request)
        answer = await asyncio.wait_for(pending, deadline.left(what))
        if isinstance(answer, mcp_types.ErrorData):
            if callback is session_elicitation and _refused_for_no_handler(answer):
                raise ToolError(f"Task {state.task_id} {_NO_HANDLER}")
            raise ToolError(f"{method} for task {state.task_id} failed: {answer.message}")
        responses[key] = answer
    await asking_again_while_busy(
        lambda: update_task(session, state.task_id, responses, deadline.left(what)),
        deadline,
        what,
    )


def final_result(state: TaskState) -> mcp_types.CallToolResult:
    """A finished task as the ``CallToolResult`` the synchronous call would have given."""
    if state.status == "completed":
        return mcp_types.CallToolResult.model_validate(state.result or {})
    if state.status == "failed":
        message = (state.error or {}).get("message") or state.status_message
        text = message or f"Task {state.task_id} failed"
    else:
        text = f"Task {state.task_id} was cancelled"
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)], is_error=True
    )


async def no_elicitation_handler(
    context: ClientRequestContext, params: mcp_types.ElicitRequestParams
) -> mcp_types.ElicitResult:
    """The handler of a client that has none: a task that asks is an error, not a wait.

    ``_answer`` recognizes it and raises before looking at the requests, naming
    the task, as ``fastmcp-tasks``'s client half does; the task stays parked for
    another client (or ``ToolTask.answer``) to answer.
    """
    raise ToolError(f"The task {_NO_HANDLER}")


async def session_elicitation(
    context: ClientRequestContext, params: mcp_types.ElicitRequestParams
) -> mcp_types.ElicitResult | mcp_types.ErrorData:
    """The session's own elicitation callback: a FastMCP ``Client``'s ``elicitation_handler``.

    Reached through the SDK's public ``ClientSession.dispatch_input_request``, the
    way FastMCP's ``call_tool`` answers a synchronous ``InputRequiredResult``, so a
    task's questions are answered by the same handler. A session without one
    answers as the SDK's default does, which ``_answer`` turns into the
    no-handler error.
    """
    answer = await context.session.dispatch_input_request(
        context, mcp_types.ElicitRequest(params=params)
    )
    return cast("mcp_types.ElicitResult | mcp_types.ErrorData", answer)


def _refused_for_no_handler(answer: mcp_types.ErrorData) -> bool:
    """The SDK's answer for a session without an elicitation callback.

    A FastMCP handler that fails answers ``INTERNAL_ERROR``; only the SDK's
    default answers ``INVALID_REQUEST`` with this text (what a synchronous call
    to such a client shows the server). Sampling and roots refusals say otherwise.
    """
    return (
        answer.code == mcp_types.INVALID_REQUEST and answer.message == "Elicitation not supported"
    )
