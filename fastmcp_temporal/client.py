"""Drive SEP-2663 tasks from a plain ``fastmcp.Client``, on FastMCP 4.1 and 4.2.

FastMCP's own client half of the tasks extension lives in ``fastmcp-tasks``,
which exists only for FastMCP 4.1. This module is a small replacement that
works on both lines, through the public client-extension API of the MCP SDK
(``ClientExtension`` + ``ResultClaim``) and FastMCP's ``Client(extensions=...)``:

```python
from fastmcp import Client
from fastmcp_temporal.client import TasksClientExtension, call_tool_task

async with Client(url, extensions=[TasksClientExtension()]) as client:
    data = (await client.call_tool("crunch", {"steps": 3})).data  # polls to the end

    task = await call_tool_task(client, "delete_file", {"filename": "a.txt"})
    state = await task.wait(state="input_required")  # or task.status()
    (key,) = state.input_requests
    await task.answer({key: {"action": "accept", "content": {"confirm": True}}})
    print((await task.result()).data)  # or await task.cancel()
```

Declaring the extension on a ``Client`` opts every ``tools/call`` of that
client in to tasks (the extension rides on each request of the 2026-07-28
protocol); ``client.call_tool`` then finishes a tasked call transparently,
answering input requests with the client's ``elicitation_handler``.
``enable_transparent_tasks()`` does the same for every ``Client`` in the
process, as importing ``fastmcp_tasks`` does on 4.1.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import mcp_types
from fastmcp.client.extension_hooks import register_internal_client_extension_factory
from fastmcp.client.telemetry import client_span
from fastmcp.exceptions import ToolError
from fastmcp.telemetry import inject_trace_context
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientRequestContext, ClientSession, ElicitationFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter

from fastmcp_temporal import _compat
from fastmcp_temporal.client_wire import (
    CreatedTask,
    TaskState,
    TaskStatus,
    cancel_task,
    get_task,
    is_retryable_busy,
    update_task,
)

if TYPE_CHECKING:
    from fastmcp import Client
    from fastmcp.client.client import CallToolResult as FastMCPCallToolResult

TERMINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
#: The first poll comes this soon; the delay doubles up to the task's ``pollIntervalMs``.
FIRST_POLL_S = 0.02
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


# -- driving a task to its end --------------------------------------------------


class _Deadline:
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


async def _asking_again_while_busy(
    call: Callable[[], Awaitable[_T]], deadline: _Deadline, what: str
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
    deadline = _Deadline(timeout)
    what = f"Task {task_id} did not reach {' / '.join(until)} within {timeout}s"
    delay = FIRST_POLL_S
    while True:
        state = await _asking_again_while_busy(
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
    deadline: _Deadline,
    what: str,
) -> None:
    """Answer every input the task asks for, in one update.

    Elicitation goes to ``callback`` (the client's handler the extension was
    bound to); sampling and roots to the session's own callbacks (a FastMCP
    ``Client``'s ``sampling_handler`` / ``roots``), as the SDK routes a
    synchronous ``InputRequiredResult``. A handler that declines (``ErrorData``)
    raises ``ToolError``: an input response has no error variant on the wire,
    so the task stays ``input_required`` until it is cancelled or expires.
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
        if isinstance(request, mcp_types.ElicitRequest):
            if callback is _no_elicitation_handler:  # as fastmcp-tasks' client half says it
                raise ToolError(f"Task {state.task_id} {_NO_HANDLER}")
            pending = callback(context, request.params)
        else:
            pending = session.dispatch_input_request(context, request)
        answer = await asyncio.wait_for(pending, deadline.left(what))
        if isinstance(answer, mcp_types.ErrorData):
            raise ToolError(f"{method} for task {state.task_id} failed: {answer.message}")
        responses[key] = answer
    await _asking_again_while_busy(
        lambda: update_task(session, state.task_id, responses, deadline.left(what)),
        deadline,
        what,
    )


def _final_result(state: TaskState) -> mcp_types.CallToolResult:
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


# -- the client extension ---------------------------------------------------------


class TasksClientExtension(ClientExtension):
    """Declares the tasks extension on every request and finishes tasked calls.

    ``client.call_tool`` on a task tool then polls the task to its end and
    returns its result, answering input requests: elicitation with
    ``elicitation_callback`` (pass the client's, or use ``enable_transparent_tasks``),
    sampling and roots with the client's ``sampling_handler`` and ``roots``.
    """

    identifier = TASKS_EXTENSION_ID

    def __init__(self, elicitation_callback: ElicitationFnT | None = None) -> None:
        self._elicitation_callback = elicitation_callback

    def settings(self) -> dict[str, Any]:
        return {}

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (
            ResultClaim(
                result_type="task",
                model=CreatedTask,
                resolve=self._finish,
                protocol_versions=frozenset(MODERN_PROTOCOL_VERSIONS),
            ),
        )

    async def _finish(self, created: CreatedTask, ctx: ClaimContext) -> mcp_types.CallToolResult:
        final = await poll_until(
            ctx.session,
            created.task_id,
            timeout=ctx.read_timeout_seconds,
            elicitation_callback=self._elicitation_callback or _no_elicitation_handler,
        )
        return _final_result(final)


def _extension_for_client(callback: ElicitationFnT | None) -> ClientExtension | None:
    # The peer registers its own tasks extension on import; two would clash.
    if "fastmcp_tasks" in sys.modules:
        return None
    return TasksClientExtension(callback)


def enable_transparent_tasks() -> None:
    """Declare the tasks extension on every ``fastmcp.Client`` built from now on.

    Each client gets a ``TasksClientExtension`` bound to its own elicitation
    handler, through FastMCP's hook for companion packages. Idempotent. Inert
    while ``fastmcp_tasks`` is imported (it registers its own, on FastMCP 4.1).
    """
    register_internal_client_extension_factory(_extension_for_client)


# -- the explicit handle ----------------------------------------------------------


class ToolTask:
    """A task on the server: ``status`` / ``wait`` / ``answer`` / ``result`` / ``cancel``.

    Built by ``call_tool_task``, or from a task id or ``CreatedTask``
    (``ToolTask(client, tool, task)``), e.g. from another connection: a task
    outlives the connection that created it.
    """

    def __init__(
        self,
        client: Client,
        tool_name: str,
        task: str | CreatedTask,
        *,
        raise_on_error: bool = True,
    ) -> None:
        self._client = client
        self._tool_name = tool_name
        self._created = task if isinstance(task, CreatedTask) else None
        self._task_id = task.task_id if isinstance(task, CreatedTask) else task
        self._raise_on_error = raise_on_error
        self._result: FastMCPCallToolResult | None = None

    @property
    def task_id(self) -> str:
        return self._task_id

    @property
    def create_result(self) -> CreatedTask | None:
        """What ``tools/call`` answered (``None`` for a handle built from an id)."""
        return self._created

    @property
    def tool_name(self) -> str:
        return self._tool_name

    async def status(self) -> TaskState:
        """``tasks/get``, once."""
        return await get_task(self._client.session, self._task_id)

    async def wait(self, *, state: str | None = None, timeout: float = 300.0) -> TaskState:
        """Poll until ``state`` (default: any terminal status); input requests are not answered."""
        until = (state,) if state is not None else tuple(TERMINAL_STATUSES)
        return await poll_until(self._client.session, self._task_id, until=until, timeout=timeout)

    async def answer(self, input_responses: Mapping[str, Any]) -> None:
        """``tasks/update``: answers keyed as the task's ``input_requests`` are."""
        await _asking_again_while_busy(
            lambda: update_task(self._client.session, self._task_id, input_responses),
            _Deadline(None),
            f"tasks/update of {self._task_id}",
        )

    async def cancel(self) -> None:
        """``tasks/cancel``: the task ends ``cancelled`` unless it finished first."""
        await _asking_again_while_busy(
            lambda: cancel_task(self._client.session, self._task_id),
            _Deadline(None),
            f"tasks/cancel of {self._task_id}",
        )

    async def result(self, *, timeout: float | None = None) -> FastMCPCallToolResult:
        """Drive the task to its end and return the result as ``client.call_tool`` would.

        Input requests are answered with the client's ``elicitation_handler``
        (without one, they raise ``ToolError``), ``sampling_handler`` and
        ``roots``. A failed or cancelled task raises ``ToolError`` unless the
        handle was made with ``raise_on_error=False``.
        """
        if self._result is None:
            callback = _compat.client_elicitation_callback(self._client)
            final = await poll_until(
                self._client.session,
                self._task_id,
                timeout=timeout,
                elicitation_callback=callback or _no_elicitation_handler,
            )
            self._result = await _compat.parse_tool_result(
                self._client,
                self._tool_name,
                _final_result(final),
                raise_on_error=self._raise_on_error,
            )
        return self._result


async def _no_elicitation_handler(
    context: ClientRequestContext, params: mcp_types.ElicitRequestParams
) -> mcp_types.ElicitResult:
    """The handler of a client that has none: a task that asks is an error, not a wait.

    ``_answer`` recognizes it and raises before looking at the requests, naming
    the task, as ``fastmcp-tasks``'s client half does; the task stays parked for
    another client (or ``ToolTask.answer``) to answer.
    """
    raise ToolError(f"The task {_NO_HANDLER}")


async def call_tool_task(
    client: Client,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    version: str | None = None,
    meta: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    raise_on_error: bool = True,
) -> ToolTask:
    """Call ``name`` as a task and return its handle as soon as the server accepts it.

    The client must declare the tasks extension (``TasksClientExtension`` or
    ``enable_transparent_tasks``; on 4.1, importing ``fastmcp_tasks`` also does).
    A call the server answers synchronously raises ``ToolError``.
    """
    request_meta: dict[str, Any] = dict(meta or {})
    if version is not None:
        request_meta["fastmcp"] = {**request_meta.get("fastmcp", {}), "version": version}
    with client_span("tools/call", "tools/call", name, tool_name=name):
        raw = await client.session.call_tool(
            name=name,
            arguments=dict(arguments or {}),
            read_timeout_seconds=timeout,
            meta=inject_trace_context(request_meta) or None,
            allow_claimed=True,
        )
    if getattr(raw, "result_type", None) != "task":
        raise ToolError(
            f"Tool {name!r} did not run as a task (the server answered {type(raw).__name__}): "
            "is it a task tool, and does the client declare the tasks extension?"
        )
    # The claim model is ours, or the peer's when fastmcp_tasks (FastMCP 4.1) is imported.
    created = CreatedTask.model_validate(raw.model_dump(by_alias=True, mode="json"))
    return ToolTask(client, name, created, raise_on_error=raise_on_error)


__all__ = [
    "CreatedTask",
    "TaskState",
    "TaskStatus",
    "TasksClientExtension",
    "ToolTask",
    "call_tool_task",
    "cancel_task",
    "enable_transparent_tasks",
    "get_task",
    "poll_until",
    "update_task",
]
