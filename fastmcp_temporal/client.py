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
process, as importing ``fastmcp_tasks`` does on 4.1. How a task is driven to its
end (polling, answering input, a busy server) is ``client_drive``; the requests
themselves are ``client_wire``; its result, parsed as ``call_tool`` parses one, is
``client_result``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import mcp_types
from fastmcp.client.extension_hooks import register_internal_client_extension_factory
from fastmcp.client.telemetry import client_span
from fastmcp.exceptions import ToolError
from fastmcp.telemetry import inject_trace_context
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ElicitationFnT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from fastmcp_temporal.client_drive import (
    TERMINAL_STATUSES,
    Deadline,
    asking_again_while_busy,
    final_result,
    no_elicitation_handler,
    poll_until,
    session_elicitation,
)
from fastmcp_temporal.client_result import parse_tool_result
from fastmcp_temporal.client_wire import (
    CreatedTask,
    TaskState,
    TaskStatus,
    cancel_task,
    get_task,
    update_task,
)

if TYPE_CHECKING:
    from fastmcp import Client
    from fastmcp.client.client import CallToolResult as FastMCPCallToolResult


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
            elicitation_callback=self._elicitation_callback or no_elicitation_handler,
        )
        return final_result(final)


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
        await asking_again_while_busy(
            lambda: update_task(self._client.session, self._task_id, input_responses),
            Deadline(None),
            f"tasks/update of {self._task_id}",
        )

    async def cancel(self) -> None:
        """``tasks/cancel``: the task ends ``cancelled`` unless it finished first."""
        await asking_again_while_busy(
            lambda: cancel_task(self._client.session, self._task_id),
            Deadline(None),
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
            final = await poll_until(
                self._client.session,
                self._task_id,
                timeout=timeout,
                elicitation_callback=session_elicitation,
            )
            self._result = await parse_tool_result(
                self._client,
                self._tool_name,
                final_result(final),
                raise_on_error=self._raise_on_error,
            )
        return self._result


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
