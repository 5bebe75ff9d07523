"""Durable synchronous calls from clients that are not FastMCP's (issue 27).

Two clients that do not declare the tasks extension, over streamable HTTP:

- the MCP Python SDK's own ``ClientSession`` (``mcp.client.streamable_http``, no
  FastMCP on the client side), on 2025-11-25 (``initialize``) and 2026-07-28
  (``server/discover``);
- a raw 2026-07-28 JSON-RPC client (``tests.wire.RawMcp``, ``declare_tasks=False``),
  whose answers are compared as the JSON the server sent.

For each: a call is a task workflow on the test's queue, answering what the task's
workflow ended with, which is what the same body answers inline (the twins of
``tests.test_sync_calls``, ``ToolOptions(durable_sync_calls=False)``); progress
reaches the client in order; bad arguments answer what the inline twin answers and
start nothing; on 2026-07-28 a tool that asks twice is two MRTR rounds of one task, also
when its legs run on another worker than the front end's (which then learns of the
questions by reading the task).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import mcp_types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import McpTasksPlugin, TemporalTasks
from fastmcp_temporal.server.core.visibility import workflow_type
from fastmcp_temporal.testing import EmbeddedServer
from tests import test_sync_calls, test_sync_calls_lifecycle
from tests.plain_calls import count_workflows, wait_status, workflows
from tests.ports import run_server_async
from tests.wire import RawMcp

BuildTasks = Callable[..., TemporalTasks]
#: ``(progress, total, message)`` of each ``notifications/progress``, as received.
Progress = list[tuple[float, float | None, str | None]]

MODERN, HANDSHAKE = "2026-07-28", "2025-11-25"


class Caller(Protocol):
    """One client's ``tools/call``, answering its JSON-RPC response without the ``id``:
    ``{"result": ...}`` or ``{"error": ...}``."""

    async def call(
        self, name: str, arguments: dict[str, Any], progress: Progress | None = None, **params: Any
    ) -> dict[str, Any]: ...


class SdkSession:
    """The SDK's ``ClientSession``: no tasks extension, ``elicitation`` declared."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(
        self, name: str, arguments: dict[str, Any], progress: Progress | None = None, **params: Any
    ) -> dict[str, Any]:
        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            assert progress is not None
            progress.append((value, total, message))

        try:
            result = await self.session.call_tool(
                name,
                arguments,
                progress_callback=on_progress if progress is not None else None,
                allow_input_required=True,
                input_responses=params.get("inputResponses"),
                request_state=params.get("requestState"),
            )
        except MCPError as err:
            return {"error": err.error.model_dump(by_alias=True, mode="json", exclude_none=True)}
        return {"result": result.model_dump(by_alias=True, mode="json", exclude_none=True)}


class RawJsonRpc:
    """``RawMcp`` without the tasks extension; with ``progress``, read as its SSE stream."""

    def __init__(self, url: str) -> None:
        self.raw = RawMcp(url)

    async def call(
        self, name: str, arguments: dict[str, Any], progress: Progress | None = None, **params: Any
    ) -> dict[str, Any]:
        request = {"name": name, "arguments": arguments, **params}
        if progress is None:
            _, body = await self.raw.call("tools/call", request, declare_tasks=False)
            return {key: value for key, value in body.items() if key != "id"}
        token = f"progress-of-{name}"
        request["_meta"] = {"progressToken": token}
        streaming = self.raw.stream("tools/call", request, declare_tasks=False)
        async with streaming as (request_id, frames):
            async for frame in frames:
                if frame.get("method") == "notifications/progress":
                    sent = frame["params"]
                    assert sent["progressToken"] == token, frame
                    progress.append((sent["progress"], sent.get("total"), sent.get("message")))
                elif frame.get("id") == request_id:
                    return {key: value for key, value in frame.items() if key != "id"}
        raise AssertionError("the stream ended without the call's response")


async def elicits(*_: Any) -> mcp_types.ElicitResult:
    """Only makes the ``ClientSession`` declare ``elicitation``: MRTR asks by result."""
    raise AssertionError("a 2026-07-28 question is a round, never a request")


@contextlib.asynccontextmanager
async def connect(client: str, url: str) -> AsyncIterator[Caller]:
    if client == "raw-json-rpc":
        yield RawJsonRpc(url)
        return
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, elicitation_callback=elicits) as session,
    ):
        if client.endswith(MODERN):
            await session.discover()
        else:
            await session.initialize()
        assert session.protocol_version == client.removeprefix("sdk-session-")
        yield SdkSession(session)


CLIENTS = [f"sdk-session-{HANDSHAKE}", f"sdk-session-{MODERN}", "raw-json-rpc"]


@pytest.fixture
def runs() -> list[str]:
    return []


@pytest.fixture
async def url(temporal_tasks: BuildTasks, runs: list[str]) -> AsyncIterator[str]:
    """``tests.test_sync_calls``'s server: each tool and its inline twin, details masked."""
    served = test_sync_calls.build(
        test_sync_calls.extension(temporal_tasks), runs, mask_error_details=True
    )
    async with run_server_async(served) as server_url:
        yield server_url


async def tasks_of(
    temporal_client: TemporalClient, task_queue: str, expected: int
) -> dict[str, dict[str, Any]]:
    """Once ``expected`` tasks are on the queue: each one's workflow type -> what it ended with."""
    assert await count_workflows(temporal_client, task_queue, expected) == expected
    ended: dict[str, dict[str, Any]] = {}
    async for listed in temporal_client.list_workflows(f"TaskQueue = '{task_queue}'"):
        ended[listed.workflow_type] = await temporal_client.get_workflow_handle(listed.id).result()
    return ended


def as_ended(answer: dict[str, Any]) -> dict[str, Any]:
    """A call's result as its task ended with it: without the ``serverInfo`` FastMCP adds
    to every 2026-07-28 result (``_meta``, dropped once empty)."""
    result = json.loads(json.dumps(answer["result"]))
    meta = result.get("_meta", {})
    meta.pop("io.modelcontextprotocol/serverInfo", None)
    if not meta:
        result.pop("_meta", None)
    return result


def as_durable(body: dict[str, Any], name: str) -> dict[str, Any]:
    """The inline twin's answer as the durable tool's (the tool name appears in masked errors)."""
    return json.loads(json.dumps(body).replace(f"{name}_inline", name))


@pytest.mark.parametrize("client", CLIENTS)
async def test_the_call_is_a_workflow_and_answers_what_the_inline_twin_answers(
    url: str, client: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    calls = {"report": {"topic": "tides", "pages": 7}, "fails": {}, "crashes": {}}
    answers: dict[str, dict[str, Any]] = {}
    async with connect(client, url) as caller:
        for name, arguments in calls.items():
            answers[name] = await caller.call(name, arguments)
            inline = await caller.call(f"{name}_inline", arguments)
            assert answers[name] == as_durable(inline, name), name
    report, fails, crashes = (answers[name]["result"] for name in calls)
    assert report["structuredContent"] == {"topic": "tides", "pages": 7}
    assert "isError" not in report or report["isError"] is False
    assert fails["isError"] is True
    assert fails["content"] == [{"type": "text", "text": "the archive is closed"}]
    assert crashes["isError"] is True
    assert "internal detail" not in json.dumps(crashes)  # masked, as the server masks
    assert runs == ["report:task", "report_inline:inline"]  # the durable body ran in a task leg
    # One task per durable call, none for a twin; each answered what its workflow ended with.
    ended = await tasks_of(temporal_client, task_queue, len(calls))
    assert set(ended) == {workflow_type(name) for name in calls}
    for name in calls:
        view = ended[workflow_type(name)]
        assert view["status"] == "completed", view
        assert view["result"] == as_ended(answers[name]), name


@pytest.mark.parametrize("client", CLIENTS)
async def test_progress_reaches_the_client_in_order(
    url: str, client: str, temporal_client: TemporalClient, task_queue: str
) -> None:
    seen: Progress = []
    async with connect(client, url) as caller:
        body = await caller.call("steps", {"count": 3}, progress=seen)
    assert body["result"]["content"] == [{"type": "text", "text": "done"}]
    assert seen == [(float(i), 3.0, f"step {i}") for i in (1, 2, 3)]
    assert list(await tasks_of(temporal_client, task_queue, 1)) == [workflow_type("steps")]


@pytest.mark.parametrize("client", CLIENTS)
async def test_bad_arguments_answer_as_inline_and_start_nothing(
    url: str, client: str, temporal_client: TemporalClient, task_queue: str
) -> None:
    bad = {"topic": "tides", "pages": "many"}
    async with connect(client, url) as caller:
        durable = await caller.call("report", bad)
        inline = await caller.call("report_inline", bad)
        missing = await caller.call("report", {})
        missing_inline = await caller.call("report_inline", {})
        # A good call after them: once its task is listed, theirs would be too.
        good = await caller.call("report", {"topic": "tides"})
    assert durable == as_durable(inline, "report")
    assert missing == as_durable(missing_inline, "report")
    # FastMCP answers bad arguments with an isError result (not -32602), inline and durable.
    for body, argument in [(durable, "pages"), (missing, "topic")]:
        (block,) = body["result"]["content"]
        assert body["result"]["isError"] is True
        assert block["text"].startswith("1 validation error for call[report]\n" + argument)
    assert good["result"]["structuredContent"] == {"topic": "tides", "pages": 3}
    assert list(await tasks_of(temporal_client, task_queue, 1)) == [workflow_type("report")]
    assert len(await workflows(temporal_client, task_queue)) == 1


# -- 2026-07-28: a tool that asks twice is MRTR rounds of one task -------------------------------


@pytest.fixture
def legs() -> list[str]:
    return []


@pytest.fixture
async def asking_url(temporal_tasks: BuildTasks, legs: list[str]) -> AsyncIterator[str]:
    """``tests.test_sync_calls_lifecycle``'s server: ``interview`` asks in two legs."""
    async with run_server_async(test_sync_calls_lifecycle.build(temporal_tasks(), legs)) as served:
        yield served


def answer(name: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": name}}


@pytest.mark.parametrize("client", [f"sdk-session-{MODERN}", "raw-json-rpc"])
async def test_questions_are_mrtr_rounds_of_one_task(
    asking_url: str, client: str, legs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    async with connect(client, asking_url) as caller:
        done = (await caller.call("interview", {}))["result"]
        rounds = (("first", "Your name?", "Ada"), ("second", "And your pet's name?", "Rex"))
        for tool_key, question, name in rounds:
            assert done["resultType"] == "input_required", done
            # Each key as the task names it (the leg's number first); the body sees its own.
            ((key, asked),) = done["inputRequests"].items()
            assert key.endswith(tool_key) and asked["params"]["message"] == question
            done = (
                await caller.call(
                    "interview",
                    {},
                    inputResponses={key: answer(name)},
                    requestState=done["requestState"],
                )
            )["result"]
    assert done["content"] == [{"type": "text", "text": "Ada+Rex"}]
    assert done.get("resultType", "complete") == "complete"
    assert legs == ["", "first", "second"]  # each leg ran once, with its round's answers
    (view,) = (await tasks_of(temporal_client, task_queue, 1)).values()
    assert view["status"] == "completed"
    assert view["result"] == as_ended({"result": done})


async def test_questions_of_a_task_on_another_worker_reach_the_client(
    temporal_tasks: BuildTasks,
    temporal_server: EmbeddedServer,
    temporal_client: TemporalClient,
    task_queue: str,
    legs: list[str],
) -> None:
    """A front end without a worker hears nothing of its tasks in-process: it learns that
    one parked by reading it while the call waits (at most once a second). The questions
    arrive as MRTR rounds of one task, and a task that runs a while answers."""
    front = test_sync_calls_lifecycle.build(temporal_tasks(run_worker=False), legs)
    plugin = McpTasksPlugin(
        test_sync_calls_lifecycle.build(temporal_tasks(), legs),
        credentials_key_dir=temporal_server.data_dir,
    )
    async with (
        Worker(temporal_client, task_queue=task_queue, plugins=[plugin]),
        run_server_async(front) as served,
        connect("raw-json-rpc", served) as caller,
    ):
        done = (await caller.call("interview", {}))["result"]
        for name in ("Ada", "Rex"):
            assert done["resultType"] == "input_required", done
            ((key, _),) = done["inputRequests"].items()
            responses = {key: answer(name)}
            state = done["requestState"]
            done = (
                await caller.call("interview", {}, inputResponses=responses, requestState=state)
            )["result"]
        assert done["content"] == [{"type": "text", "text": "Ada+Rex"}]
        napped = (await caller.call("nap", {"seconds": 1.5}))["result"]
    assert napped["content"] == [{"type": "text", "text": "rested"}]
    assert legs == ["", "first", "second"]


async def test_notifications_cancelled_cancels_a_call_without_a_progress_token(
    asking_url: str, temporal_client: TemporalClient, task_queue: str
) -> None:
    """The SDK's ``ClientSession`` sends no ``progressToken`` unless asked: its call waits on
    the close event alone, and cancelling it still cancels the task (2025-11-25, where
    the SDK sends ``notifications/cancelled``)."""
    async with connect(f"sdk-session-{HANDSHAKE}", asking_url) as caller:
        call = asyncio.create_task(caller.call("nap", {"seconds": 60}))
        await wait_status(temporal_client, task_queue, "working")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    await wait_status(temporal_client, task_queue, "cancelled")
