"""The worker side of remote MCP calls: named connections and the activities that use them.

```python
mcp.add_extension(TemporalTasks(remote_servers={
    "search": RemoteServer.http("https://search.example/mcp", bearer_token=os.environ["TOKEN"]),
    "files": RemoteServer.stdio("uvx", ["some-mcp-server"]),
}))
```

Workflow code names a connection (``remote("search")``); only that name is in
history. The URL, headers, token and command stay here, in the worker's memory,
as with ``temporalio-mcp``'s ``MCPPlugin`` (a factory returning a ``fastmcp.Client``
is accepted too). Each worker keeps one open client per connection
(``remote_connections.Connections``), but no step depends on which worker ran
the one before: the remote task id is in history, so any worker can take any
step of any call.

``wait_task`` is the long one: it follows a remote task until it ends, asks for
something not answered yet, or shows a new status message (at most every
``progress_after_s``), heartbeating every second so a dead worker's wait moves
on and a cancelled call stops waiting. It listens (``subscriptions/listen``)
on HTTP connections where the remote serves it and polls ``tasks/get`` at the
task's ``pollIntervalMs`` otherwise. A call's first wait is the same activity run
locally for about a second (``give_up_after_s``), without heartbeats.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import httpx
from fastmcp import Client
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID
from mcp.shared.exceptions import MCPError
from mcp_types import RequestParamsMeta
from temporalio import activity
from temporalio.exceptions import ApplicationError

from fastmcp_temporal.activities.remote_connections import (
    ClientFactory,
    Connections,
    RemoteServer,
    RemoteServers,
)
from fastmcp_temporal.activities.remote_keys import create_key
from fastmcp_temporal.client_wire import (
    IDEMPOTENCY_KEY_META,
    TEMPORAL_UNAVAILABLE,
    CreatedTask,
    TaskState,
    cancel_task,
    get_task,
    update_task,
)
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

PROTOCOL = "2026-07-28"
#: JSON-RPC errors that mean "the connection or the server's backend failed,
#: asking again may work"; any other error code is the remote's answer.
_RETRYABLE_CODES = frozenset({TEMPORAL_UNAVAILABLE, -32000, -32603})
#: A remote task is polled no faster than this, and this often when its server names
#: no ``pollIntervalMs``: the remote's clock, not this process's (``timing.TICK_S``).
_POLL_FLOOR_S = 0.05
_DEFAULT_POLL_S = 1.0


#: Every connection a worker of this process was configured with: function tools
#: (``remote_step``) call remotes from inside a leg, where no workflow names them.
_IN_THIS_PROCESS: dict[str, RemoteServer | ClientFactory] = {}


def configured_here() -> RemoteMcpActivities:
    """The remote-call operations over this process's configured connections."""
    global _HERE
    if _HERE is None or _HERE.connections.servers != _IN_THIS_PROCESS:
        _HERE = RemoteMcpActivities(_IN_THIS_PROCESS)
    return _HERE


_HERE: RemoteMcpActivities | None = None


class RemoteMcpActivities:
    """The remote-call activities, bound to this worker's named connections."""

    def __init__(self, servers: RemoteServers | Connections) -> None:
        self.connections = servers if isinstance(servers, Connections) else Connections(servers)
        self._servers = self.connections.servers
        _IN_THIS_PROCESS.update(self._servers)
        self.activities: list[Callable[..., Any]] = [
            self.list_tools,
            self.call_tool,
            self.wait_task,
            self.answer_task,
            self.cancel_task,
        ]

    @contextlib.asynccontextmanager
    async def _session(self, request: RemoteRequest, tool: str | None = None) -> AsyncIterator[Any]:
        """An open client of ``request.server``; failures become typed errors."""
        spec = self._servers.get(request.server)
        if spec is None:
            raise ApplicationError(
                f"No MCP server named {request.server!r} is configured on this worker "
                f"(configured: {sorted(self._servers)})",
                type=UNAVAILABLE_TYPE,
                non_retryable=True,
            )
        try:
            async with self.connections.client(request.server) as client:
                yield client
        except ApplicationError:
            raise
        except MCPError as err:
            what = f"{request.server}/{tool}" if tool else request.server
            if err.code in _RETRYABLE_CODES:
                raise ApplicationError(f"{what}: {err.message}", type=UNAVAILABLE_TYPE) from err
            raise ApplicationError(
                f"{what}: {err.message}", err.code, type=TOOL_ERROR_TYPE, non_retryable=True
            ) from err
        except asyncio.CancelledError:
            raise
        except Exception as err:  # refused, reset, timed out, a stdio server that died
            raise ApplicationError(
                f"cannot reach {request.server!r}: {type(err).__name__}: {err}",
                type=UNAVAILABLE_TYPE,
            ) from err

    @activity.defn(name=LIST_TOOLS_ACTIVITY)
    async def list_tools(self, request: RemoteRequest) -> list[dict[str, Any]]:
        async with self._session(request) as client:
            tools = await client.list_tools()
        return [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in tools]

    @activity.defn(name=CALL_TOOL_ACTIVITY)
    async def call_tool(self, call: RemoteCall) -> RemoteCallOutcome:
        """``tools/call``; a task the remote created is reported at once (heartbeat too).

        The task id goes into a heartbeat the moment the remote answers: if this
        worker dies before the activity completes, the retry finds it there and
        returns it instead of creating a second remote task. While the request is
        in flight it heartbeats every second, so a slow answer is not taken for a
        dead worker and a cancellation reaches it.
        """
        previous = activity.info().heartbeat_details
        if previous:
            recorded = RemoteTaskState.model_validate(previous[0])
            return RemoteCallOutcome(task=recorded)
        calling = asyncio.create_task(self.start_call(call, create_key()))
        # A quick answer (the usual case) costs no heartbeat round trip.
        heartbeats = asyncio.create_task(_heartbeat_every_second(first_after_s=1.0))
        try:
            outcome = await asyncio.shield(calling)
        except asyncio.CancelledError:
            # Our call was cancelled with the request in flight: the remote may
            # create the task all the same, so its answer is awaited and returned;
            # the workflow cancels the task it names (``RemoteServer._create``).
            outcome = await calling
        finally:
            heartbeats.cancel()
        if outcome.task is not None:
            activity.heartbeat(outcome.task.model_dump(mode="json"))
        return outcome

    async def start_call(self, call: RemoteCall, key: str | None = None) -> RemoteCallOutcome:
        """``tools/call`` with the tasks extension declared: a result, or the created task.

        ``key`` (``remote_keys``) goes in ``_meta``, where any transport carries
        it: a remote that knows it (ours) answers a repeated create with the task the
        first one made; one that does not ignores it (``_meta`` is open by the spec).
        """
        meta = cast(RequestParamsMeta, {IDEMPOTENCY_KEY_META: key}) if key is not None else None
        async with self._session(call, call.tool) as client:
            raw = await client.session.call_tool(
                name=call.tool, arguments=call.arguments, meta=meta, allow_claimed=True
            )
            if getattr(raw, "result_type", None) != "task":
                return RemoteCallOutcome(
                    result=raw.model_dump(by_alias=True, mode="json", exclude_none=True)
                )
            created = CreatedTask.model_validate(raw.model_dump(by_alias=True, mode="json"))
            if created.status in REMOTE_TERMINAL:
                # A repeated create can name a task that has ended meanwhile: the
                # create's answer has its status only, ``tasks/get`` its outcome.
                return RemoteCallOutcome(
                    task=_state(await get_task(client.session, created.task_id))
                )
        return RemoteCallOutcome(task=_state(created))

    @activity.defn(name=WAIT_TASK_ACTIVITY)
    async def wait_task(self, wait: RemoteWait) -> RemoteTaskState:
        """``wait``, heartbeating -- except as a call's bounded first wait, a local activity."""
        local = activity.info().is_local
        heartbeats = None if local else asyncio.create_task(_heartbeat_every_second())
        try:
            return await self.wait(wait)
        finally:
            if heartbeats is not None:
                heartbeats.cancel()

    async def wait(self, wait: RemoteWait) -> RemoteTaskState:
        """The remote task's next state worth acting on (see ``RemoteWait``)."""
        loop = asyncio.get_running_loop()
        progress_due = loop.time() + wait.progress_after_s if wait.progress_after_s else None
        give_up = loop.time() + wait.give_up_after_s if wait.give_up_after_s else None
        answered = set(wait.answered)
        spec = self._servers.get(wait.server)
        async with self._session(wait, wait.tool) as client:
            feed: asyncio.Queue[RemoteTaskState | BaseException] = asyncio.Queue()
            listens = isinstance(spec, RemoteServer) and spec.url is not None
            producer = asyncio.create_task(
                _listen_or_poll(
                    client,
                    (self.connections.http(), spec) if listens else None,
                    wait,
                    feed,
                    self._get,
                )
            )
            try:
                # A listen stream's first frame is the task as it is now; else the first poll.
                state = _checked(await feed.get())
                while True:
                    if state.status in REMOTE_TERMINAL or state.new_requests(answered):
                        return state
                    shows_news = progress_due is not None and state.status_message not in (
                        None,
                        wait.status_message,
                    )
                    news_due = progress_due if shows_news else None
                    due = [t for t in (give_up, news_due) if t is not None]
                    timeout = min(due) - loop.time() if due else None
                    if timeout is not None and timeout <= 0:
                        return state
                    try:
                        state = _checked(await asyncio.wait_for(feed.get(), timeout))
                    except TimeoutError:
                        continue
            finally:
                producer.cancel()
                with contextlib.suppress(BaseException):
                    await producer

    async def _get(self, client: Client[Any], wait: RemoteWait) -> RemoteTaskState:
        try:
            return _state(await get_task(client.session, wait.task_id))
        except MCPError as err:
            if err.code == -32602:  # not found: expired (or never ours)
                raise ApplicationError(
                    f"Remote task {wait.task_id} of {wait.server}/{wait.tool} is gone: "
                    f"{err.message}",
                    wait.task_id,
                    type=TASK_GONE_TYPE,
                    non_retryable=True,
                ) from err
            raise

    @activity.defn(name=ANSWER_TASK_ACTIVITY)
    async def answer_task(self, answer: RemoteAnswer) -> None:
        """``tasks/update``: keys the remote no longer waits for are ignored, so a retry is safe."""
        async with self._session(answer) as client:
            await update_task(client.session, answer.task_id, answer.responses)

    @activity.defn(name=CANCEL_TASK_ACTIVITY)
    async def cancel_task(self, cancel: RemoteCancel) -> None:
        await self.cancel(cancel)

    async def cancel(self, cancel: RemoteCancel) -> None:
        async with self._session(cancel) as client:
            await cancel_task(client.session, cancel.task_id)


def _state(task: CreatedTask | TaskState) -> RemoteTaskState:
    """What the remote showed of its task: a create's answer (no outcome) or ``tasks/get``."""
    return RemoteTaskState.model_validate(
        task.model_dump(include=set(RemoteTaskState.model_fields))
    )


async def _heartbeat_every_second(*, first_after_s: float = 0.0) -> None:
    await asyncio.sleep(first_after_s)
    while True:
        activity.heartbeat()
        await asyncio.sleep(1)


def _checked(item: RemoteTaskState | BaseException) -> RemoteTaskState:
    if isinstance(item, BaseException):
        raise item
    return item


async def _listen_or_poll(
    client: Client[Any],
    listen: tuple[httpx.AsyncClient, RemoteServer] | None,
    wait: RemoteWait,
    feed: asyncio.Queue[RemoteTaskState | BaseException],
    get: Callable[[Client[Any], RemoteWait], Any],
) -> None:
    """Feed every new state of the task: from a listen stream, else by polling."""
    try:
        if listen is not None:
            async for state in _listen(*listen, wait.task_id):
                await feed.put(state)
        # No listen (or the stream ended before the task did): poll, from at once up
        # to the task's pollIntervalMs.
        delay = 0.0
        while True:
            await asyncio.sleep(delay)
            state = await get(client, wait)
            await feed.put(state)
            interval = (state.poll_interval_ms or 0) / 1000 or _DEFAULT_POLL_S
            delay = min(max(delay * 2, _POLL_FLOOR_S), interval)
    except asyncio.CancelledError:
        raise
    except BaseException as err:
        await feed.put(err)


async def _listen(
    http: httpx.AsyncClient, server: RemoteServer, task_id: str
) -> AsyncIterator[RemoteTaskState]:
    """``subscriptions/listen`` for one task; ends quietly if the remote does not serve it."""
    assert server.url is not None
    capabilities = {"extensions": {TASKS_EXTENSION_ID: {}}}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {
            "notifications": {"taskIds": [task_id]},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                "io.modelcontextprotocol/clientCapabilities": capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "fastmcp-temporal", "version": "1"},
            },
        },
    }
    headers = {
        **server.http_headers(),
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
        "Mcp-Method": "subscriptions/listen",
    }
    async with http.stream("POST", server.url, json=body, headers=headers) as response:
        if response.status_code != 200 or not response.headers.get("content-type", "").startswith(
            "text/event-stream"
        ):
            return  # not served (e.g. the peer): poll instead
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            message = json.loads(line[5:])
            method = message.get("method")
            if method == "notifications/subscriptions/acknowledged":
                ids = message.get("params", {}).get("notifications", {}).get("taskIds", [])
                if task_id not in ids:
                    return
            elif method == "notifications/tasks":
                yield _state(TaskState.model_validate(message.get("params", {})))
            elif "id" in message:
                return  # the stream's end (or an error): poll from here
