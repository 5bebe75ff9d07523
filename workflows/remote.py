"""Inside a workflow tool: call the tools of other MCP servers as durable steps.

```python
from fastmcp_temporal.workflows import remote


@workflow.defn
class Triage:
    @workflow.run
    async def run(self, topic: str) -> str:
        search = remote("search")  # a connection configured on the worker
        hits = await search.call_tool("web_search", {"q": topic})
        report = await search.call_tool("deep_report", {"q": topic})  # a remote task
        ...
```

The name is all history records of a connection: its URL, headers, token or
command are the worker's (``TemporalTasks(remote_servers=...)``).

A tool the remote runs synchronously is one activity (retried by ``retry``).
A tool the remote runs as a SEP-2663 task is created in one activity, so the
remote task id is in history before anything waits for it; then activities
wait for it (listening where the remote serves ``subscriptions/listen``, else
polling at its ``pollIntervalMs``; the first is a local activity of about a
second). A worker that dies at any point picks the same remote task up again:
the remote body runs once. The remote's input requests are asked of *our*
task's client through ``ask`` (our own keys), and the answers go back under the
remote's keys; its status messages become our task's progress; cancelling our
task cancels the remote one.

A remote ``isError`` result is returned (the agent decides). Everything else
that goes wrong raises a ``RemoteError`` the workflow can catch:
``RemoteUnavailable`` (unreachable after the retries), ``RemoteToolError``
(the remote answered with a protocol error, e.g. an unknown tool) and
``RemoteTaskError`` (the remote task failed, was cancelled or is gone).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any

import mcp_types
from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    FailureError,
    is_cancelled_exception,
)
from temporalio.workflow import ActivityCancellationType

from fastmcp_temporal.workflows.remote_models import (
    ANSWER_TASK_ACTIVITY,
    CALL_TOOL_ACTIVITY,
    CANCEL_TASK_ACTIVITY,
    LIST_TOOLS_ACTIVITY,
    REMOTE_TERMINAL,
    TASK_GONE_TYPE,
    TOOL_ERROR_TYPE,
    UNAVAILABLE_TYPE,
    WAIT_TASK_ACTIVITY,
    RemoteAnswer,
    RemoteCall,
    RemoteCallOutcome,
    RemoteCancel,
    RemoteRequest,
    RemoteTaskState,
    RemoteWait,
)
from fastmcp_temporal.workflows.tool_helpers import ask, report_progress

DEFAULT_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=5,
)
#: Waiting activities retry (e.g. while the remote restarts) until the call's
#: ``wait_timeout``, never giving up on their own.
_WAIT_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=5)
)


#: Cancelled while the create activity runs: wait for its outcome and cancel the
#: remote task it made (``RemoteServer._create``).
_CANCEL_WHAT_CREATE_MADE = "remote-create-cancel"
#: A call's first wait is a short local activity (``RemoteServer._wait_locally_first``).
_LOCAL_FIRST_WAIT = "remote-local-first-wait"
#: How long that first wait follows the remote task before the wait activity takes over.
_LOCAL_WAIT = timedelta(seconds=1)


class RemoteError(ApplicationError):
    """Something went wrong calling a remote MCP server (not a tool's ``isError``).

    An ``ApplicationError`` (non-retryable): uncaught, it fails the workflow
    tool, and our task ends with it as its error result.
    """

    def __init__(self, message: str, *, server: str, tool: str | None) -> None:
        super().__init__(message, type=type(self).__name__, non_retryable=True)
        self.server = server
        self.tool = tool


class RemoteUnavailable(RemoteError):
    """The connection could not be used (server down, refused, not configured)."""


class RemoteToolError(RemoteError):
    """The remote answered with a protocol error (unknown tool, bad arguments, ...)."""

    def __init__(self, message: str, *, server: str, tool: str | None, code: int | None) -> None:
        super().__init__(message, server=server, tool=tool)
        self.code = code


class RemoteTaskError(RemoteError):
    """The remote task ended ``failed`` or ``cancelled``, or expired and is gone."""

    def __init__(self, message: str, *, server: str, tool: str, task_id: str, status: str) -> None:
        super().__init__(message, server=server, tool=tool)
        self.task_id = task_id
        self.status = status


class RemoteServer:
    """A workflow's handle to one named connection; build it with ``remote(name)``."""

    def __init__(
        self,
        name: str,
        *,
        retry: RetryPolicy,
        call_timeout: timedelta,
        wait_timeout: timedelta,
        heartbeat_timeout: timedelta,
        progress_every: timedelta | None,
        task_queue: str | None,
    ) -> None:
        self.name = name
        self._retry = retry
        self._call_timeout = call_timeout
        self._wait_timeout = wait_timeout
        self._heartbeat_timeout = heartbeat_timeout
        self._progress_every = progress_every
        self._task_queue = task_queue

    async def list_tools(self) -> list[mcp_types.Tool]:
        """The remote's tools (one activity; every page)."""
        tools = await self._run(
            LIST_TOOLS_ACTIVITY, RemoteRequest(server=self.name), list[dict[str, Any]], None
        )
        return [mcp_types.Tool.model_validate(tool) for tool in tools]

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> mcp_types.CallToolResult:
        """Call ``name``; a remote task is followed to its end. ``isError`` is returned."""
        call = RemoteCall(server=self.name, tool=name, arguments=dict(arguments or {}))
        outcome = await self._create(call)
        if outcome.task is None:
            return mcp_types.CallToolResult.model_validate(outcome.result or {})
        try:
            return await self._follow(name, outcome.task)
        except asyncio.CancelledError:
            # Our task was cancelled: so is the remote one, before we end.
            cancel = RemoteCancel(server=self.name, task_id=outcome.task.task_id)
            await self._run(CANCEL_TASK_ACTIVITY, cancel, type(None), name)
            raise

    async def _create(self, call: RemoteCall) -> RemoteCallOutcome:
        """The create activity; cancelled meanwhile, a remote task it made anyway is cancelled.

        The activity does not abandon a ``tools/call`` in flight when cancelled
        (the remote may create the task all the same): it lets the answer come
        and returns it. So a cancellation here waits for the create's outcome
        (``WAIT_CANCELLATION_COMPLETED``), and a remote task in it is cancelled
        before our task ends. Histories recorded before this (patch absent)
        ended at once, as they did.
        """
        handle = workflow.start_activity(
            CALL_TOOL_ACTIVITY,
            call,
            result_type=RemoteCallOutcome,
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            **self._options(call.tool, waits=False, heartbeat=True),
        )
        try:
            return await self._outcome(asyncio.shield(handle), call.tool)
        except asyncio.CancelledError:
            if not workflow.patched(_CANCEL_WHAT_CREATE_MADE):
                handle.cancel()
                raise
            # A create that completed in the same workflow task as the cancellation
            # settles first (a cancelled handle would drop its result).
            await asyncio.sleep(0)
            handle.cancel()
            try:
                created = await self._outcome(handle, call.tool)
            except (asyncio.CancelledError, RemoteError):
                raise asyncio.CancelledError() from None
            if created.task is not None:
                cancel = RemoteCancel(server=self.name, task_id=created.task.task_id)
                await self._run(CANCEL_TASK_ACTIVITY, cancel, type(None), call.tool)
            raise

    async def _follow(self, tool: str, state: RemoteTaskState) -> mcp_types.CallToolResult:
        answered: set[str] = set()
        relayed: str | None = None
        waited = False
        while True:
            if state.status == "completed":
                return mcp_types.CallToolResult.model_validate(state.result or {})
            if state.status in ("failed", "cancelled"):
                detail = (state.error or {}).get("message") or state.status_message
                raise self._task_error(tool, state.task_id, state.status, detail)
            if self._progress_every is not None and state.status_message not in (None, relayed):
                relayed = state.status_message
                await report_progress(relayed or "")
            if new := state.new_requests(answered):
                await self._relay(tool, state.task_id, new)
                answered |= set(new)
            wait = RemoteWait(
                server=self.name,
                tool=tool,
                task_id=state.task_id,
                answered=sorted(answered),
                status_message=relayed,
                progress_after_s=(
                    self._progress_every.total_seconds() if self._progress_every else None
                ),
            )
            settled = None if waited else await self._wait_locally_first(wait)
            waited = True
            if settled is not None:
                state = settled
            else:
                state = await self._run(WAIT_TASK_ACTIVITY, wait, RemoteTaskState, tool, waits=True)

    async def _wait_locally_first(self, wait: RemoteWait) -> RemoteTaskState | None:
        """The call's first wait, inside the workflow task: the remote task if it ended
        or asked within ``_LOCAL_WAIT``, else ``None`` (the wait activity takes over).

        Many remote tasks end or ask within moments. A local activity's result is
        recorded with the workflow task's next commands: no activity completion
        round trip, and one workflow task less. The remote task id is in history
        already (the create activity's result), so a worker that dies meanwhile
        costs a re-attach: the workflow task runs again elsewhere and so does this
        wait. A failure of any kind (slow, unreachable, gone) is left to the
        heartbeating wait activity, which retries or reports it. Not where the
        remote activities run on another queue (this worker may not have the
        connection), nor in histories recorded before this (patch absent).
        """
        elsewhere = self._task_queue not in (None, workflow.info().task_queue)
        if elsewhere or not workflow.patched(_LOCAL_FIRST_WAIT):
            return None
        bounded = wait.model_copy(
            update={"give_up_after_s": _LOCAL_WAIT.total_seconds(), "progress_after_s": None}
        )
        try:
            state = await workflow.execute_local_activity(
                WAIT_TASK_ACTIVITY,
                bounded,
                result_type=RemoteTaskState,
                schedule_to_close_timeout=2 * _LOCAL_WAIT,
                retry_policy=RetryPolicy(maximum_attempts=1),
                summary=f"{self.name} · {wait.tool}",
            )
        except FailureError as err:  # a local activity's failure can come unwrapped
            if is_cancelled_exception(err):
                raise asyncio.CancelledError() from err
            return None  # the wait activity meets the same failure and handles it
        ended_or_asks = state.status in REMOTE_TERMINAL or state.new_requests(set(wait.answered))
        return state if ended_or_asks else None

    async def _relay(self, tool: str, task_id: str, requests: dict[str, Any]) -> None:
        """Ask our client each new question (at once), then answer the remote in one update."""
        keys = sorted(requests)
        answers = await asyncio.gather(
            *(ask(dict(requests[key]), key=f"{self.name}.{key}") for key in keys)
        )
        responses = {
            key: answer.model_dump(by_alias=True, mode="json", exclude_none=True)
            if isinstance(answer, BaseModel)
            else answer
            for key, answer in zip(keys, answers, strict=True)
        }
        answer = RemoteAnswer(server=self.name, task_id=task_id, responses=responses)
        await self._run(ANSWER_TASK_ACTIVITY, answer, type(None), tool)

    async def _run(
        self,
        activity: str,
        request: BaseModel,
        result_type: Any,
        tool: str | None,
        *,
        waits: bool = False,
    ) -> Any:
        running = workflow.execute_activity(
            activity,
            request,
            result_type=result_type,
            **self._options(tool, waits=waits, heartbeat=False),
        )
        return await self._outcome(running, tool)

    def _options(self, tool: str | None, *, waits: bool, heartbeat: bool) -> dict[str, Any]:
        timeout = self._wait_timeout if waits else self._call_timeout
        return {
            "task_queue": self._task_queue,
            "start_to_close_timeout": timeout,
            "schedule_to_close_timeout": timeout if waits else None,
            "heartbeat_timeout": self._heartbeat_timeout if (waits or heartbeat) else None,
            "retry_policy": _WAIT_RETRY if waits else self._retry,
            "summary": f"{self.name} · {tool or 'tools/list'}",
        }

    async def _outcome(self, running: Awaitable[Any], tool: str | None) -> Any:
        """An activity's result; its failure as a ``RemoteError``, its cancellation as ours."""
        try:
            return await running
        except ActivityError as err:
            if is_cancelled_exception(err):
                raise asyncio.CancelledError() from err
            raise self._translate(err, tool) from err

    def _translate(self, err: ActivityError, tool: str | None) -> Exception:
        cause = err.cause
        if not isinstance(cause, ApplicationError):
            return RemoteUnavailable(
                f"MCP server {self.name!r} did not answer: {cause or err}",
                server=self.name,
                tool=tool,
            )
        if cause.type == TOOL_ERROR_TYPE:
            code = cause.details[0] if cause.details else None
            return RemoteToolError(
                cause.message,
                server=self.name,
                tool=tool,
                code=code if isinstance(code, int) else None,
            )
        if cause.type == TASK_GONE_TYPE:
            task_id = str(cause.details[0]) if cause.details else "?"
            return self._task_error(tool or "?", task_id, "expired", cause.message)
        prefix = "" if cause.type == UNAVAILABLE_TYPE else f"{cause.type}: "
        return RemoteUnavailable(
            f"MCP server {self.name!r}: {prefix}{cause.message}", server=self.name, tool=tool
        )

    def _task_error(
        self, tool: str, task_id: str, status: str, detail: str | None
    ) -> RemoteTaskError:
        message = f"Remote task {task_id} of {self.name}/{tool} {status}"
        return RemoteTaskError(
            f"{message}: {detail}" if detail else message,
            server=self.name,
            tool=tool,
            task_id=task_id,
            status=status,
        )


def remote(
    name: str,
    *,
    retry: RetryPolicy = DEFAULT_RETRY,
    call_timeout: timedelta = timedelta(minutes=1),
    wait_timeout: timedelta = timedelta(days=1),
    heartbeat_timeout: timedelta = timedelta(seconds=10),
    progress_every: timedelta | None = timedelta(seconds=5),
    task_queue: str | None = None,
) -> RemoteServer:
    """The connection the worker configured as ``name``, for this workflow.

    ``retry``/``call_timeout``: each request/response activity (a synchronous
    call, creating a task, answering, cancelling). ``wait_timeout``: how long a
    remote task may take in all. ``heartbeat_timeout``: how soon a dead
    worker's wait moves to another worker. ``progress_every``: the remote's
    status message becomes our task's progress at most this often (``None``:
    not relayed). ``task_queue``: where the remote activities run (default:
    the workflow's own queue; its workers must configure ``name``).
    """
    return RemoteServer(
        name,
        retry=retry,
        call_timeout=call_timeout,
        wait_timeout=wait_timeout,
        heartbeat_timeout=heartbeat_timeout,
        progress_every=progress_every,
        task_queue=task_queue,
    )
