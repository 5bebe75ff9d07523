"""Task status pushed on ``subscriptions/listen`` (SEP-2663 R43-R46), over real streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import mcp_types
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import McpTasksPlugin, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.core.wire import GetTaskResult
from fastmcp_temporal.server.tasks.engine import TaskEngine, workflow_id_for
from fastmcp_temporal.server.tasks.task_watch import watch
from tests.helpers import eventually
from tests.ports import run_server_async
from tests.wire import RawMcp

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def build(extension: TemporalTasks) -> FastMCP:
    verifier = StaticTokenVerifier(
        tokens={
            "alice": {"client_id": "app", "sub": "alice", "scopes": []},
            "bob": {"client_id": "app", "sub": "bob", "scopes": []},
        }
    )
    mcp = FastMCP("listen", auth=verifier)
    mcp.add_extension(extension)
    progress_seen = asyncio.Event()

    async def interview(ctx: Context) -> str:
        """Two rounds of questions, progress in between, then the answer."""
        answers = [
            response.content["answer"]
            for response in (ctx.input_responses or {}).values()
            if isinstance(response, mcp_types.ElicitResult) and response.content
        ]
        state = ctx.request_state or ""
        if state.startswith("name="):
            return f"{state.removeprefix('name=')} likes {answers[0]}"
        if answers:
            await ctx.report_progress(1, 2, "thinking it over")
            # Progress reads are at least 1 s apart; a local leg's progress is
            # applied at its workflow task's heartbeat (1.6 s) and committed at
            # the next one (3.2 s), later on a loaded machine: the leg goes on
            # once a client saw it (``saw_progress``), or after 8 s (within the
            # short tool's 10 s; a test expecting it then fails on its frames).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(progress_seen.wait(), 8)
        question = "color" if answers else "name"
        return mcp_types.InputRequiredResult(  # type: ignore[return-value]
            input_requests={
                question: mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message=f"Your {question}?", requested_schema=SCHEMA
                    )
                )
            },
            request_state=f"name={answers[0]}" if answers else "start",
        )

    mcp.tool(task=True)(interview)
    # Declared short: its first leg is a local activity (the answered ones are activities).
    mcp.tool(task=True, timeout=10, name="short_interview")(interview)

    @mcp.tool(task=True, timeout=25)
    async def short_count(ctx: Context) -> str:
        """A short tool (a local leg): its progress is a signal, pushed from the memo.

        The progress is applied at a workflow task heartbeat and committed at the
        next, which a loaded machine delays: the leg ends once a client has seen it
        (``saw_progress``), or after 20 s (the test then fails on its frames).
        """
        await ctx.report_progress(1, 2, "counted half")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(progress_seen.wait(), 20)
        return "counted"

    @mcp.tool
    def saw_progress() -> str:
        """Lets ``interview`` and ``short_count`` go on: their progress reached a client."""
        progress_seen.set()
        return "go on"

    @mcp.tool(task=True)
    async def nap() -> str:
        await asyncio.sleep(0.5)
        return "rested"

    return mcp


@pytest.fixture
async def url(temporal_tasks: Callable[..., TemporalTasks]) -> AsyncIterator[str]:
    async with run_server_async(build(temporal_tasks())) as server_url:
        yield server_url


async def start(raw: RawMcp, tool: str) -> str:
    created = await raw.result("tools/call", {"name": tool, "arguments": {}})
    assert created["resultType"] == "task", created
    return created["taskId"]


async def answer(raw: RawMcp, task_id: str, frame: dict[str, Any], text: str) -> None:
    (key,) = frame["inputRequests"]
    update = {key: {"action": "accept", "content": {"answer": text}}}
    await raw.result("tasks/update", {"taskId": task_id, "inputResponses": update})


@pytest.mark.parametrize("tool", ["interview", "short_interview"])
async def test_the_stream_pushes_every_transition_of_the_callers_own_tasks(
    url: str, tool: str
) -> None:
    alice, bob = RawMcp(url, bearer="alice"), RawMcp(url, bearer="bob")
    mine = await start(alice, tool)
    theirs = await start(bob, "nap")
    listen = {"notifications": {"taskIds": [theirs, mine, "no-such-task-0123456789"]}}
    frames: list[dict[str, Any]] = []
    async with alice.stream("subscriptions/listen", listen) as (subscription_id, messages):
        ack = await anext(messages)
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        # Only her own task; bob's and the unknown id are left out alike.
        assert ack["params"]["notifications"] == {"taskIds": [mine]}
        assert ack["params"]["_meta"][SUBSCRIPTION_ID] == subscription_id
        async for message in messages:
            if "id" in message:  # the graceful end: the listen request's result
                assert message["id"] == subscription_id
                assert message["result"]["_meta"][SUBSCRIPTION_ID] == subscription_id
                break
            assert message["method"] == "notifications/tasks", message
            params = message["params"]
            assert params.pop("_meta") == {SUBSCRIPTION_ID: subscription_id}
            assert params["taskId"] == mine and "resultType" not in params
            frames.append(params)
            if params.get("statusMessage") == "thinking it over":
                await alice.result("tools/call", {"name": "saw_progress", "arguments": {}})
            if params["status"] == "input_required" and params["inputRequests"]:
                key = next(iter(params["inputRequests"]))
                await answer(alice, mine, params, "Alice" if key.endswith("name") else "teal")
        else:
            pytest.fail("the stream ended without its result")

    statuses = [frame["status"] for frame in frames]
    changes = [status for i, status in enumerate(statuses) if i == 0 or statuses[i - 1] != status]
    asked = [next(iter(f["inputRequests"])) for f in frames if f["status"] == "input_required"]
    assert [key.split(".")[-1] for key in asked] == ["name", "color"]
    # The first frame is the task when the stream opened (working, or already
    # asking); after that every transition: working again after the first
    # answer (the leg waits until its progress was shown), then the second
    # question and the result.
    assert changes[changes.index("input_required") :] in (
        ["input_required", "working", "input_required", "completed"],
        ["input_required", "working", "input_required", "working", "completed"],
    )
    assert "thinking it over" in [frame.get("statusMessage") for frame in frames]
    assert frames[-1]["result"]["content"][0]["text"] == "Alice likes teal"
    final = await alice.result("tasks/get", {"taskId": mine})
    final.pop("resultType")
    final.pop("_meta", None)  # the server stamps its info on results, not on notifications
    assert frames[-1] == final


async def test_a_local_legs_progress_is_pushed_as_its_tasks_status_message(url: str) -> None:
    alice = RawMcp(url, bearer="alice")
    task_id = await start(alice, "short_count")
    frames: list[dict[str, Any]] = []
    listen = {"notifications": {"taskIds": [task_id]}}
    async with alice.stream("subscriptions/listen", listen) as (_, messages):
        async for message in messages:
            if "id" in message:
                break
            if message["method"] == "notifications/tasks":
                frames.append(message["params"])
                if message["params"].get("statusMessage") == "counted half":
                    await alice.result("tools/call", {"name": "saw_progress", "arguments": {}})
    assert [(f["status"], f.get("statusMessage")) for f in frames][-2:] == [
        ("working", "counted half"),
        ("completed", None),
    ]
    assert frames[-1]["result"]["content"][0]["text"] == "counted"


async def test_no_progress_or_log_notifications_ride_the_stream(url: str) -> None:
    alice = RawMcp(url, bearer="alice")
    task_id = await start(alice, "interview")
    listen = {"notifications": {"taskIds": [task_id]}}
    async with alice.stream("subscriptions/listen", listen) as (_, messages):
        methods = []
        async for message in messages:
            if "id" in message:
                break
            methods.append(message["method"])
            if message["method"] == "notifications/tasks":
                params = message["params"]
                if params.get("statusMessage") == "thinking it over":
                    await alice.result("tools/call", {"name": "saw_progress", "arguments": {}})
                if params["status"] == "input_required":
                    key = next(iter(params["inputRequests"]))
                    await answer(alice, task_id, params, "Bo" if key.endswith("name") else "red")
    assert set(methods) == {"notifications/subscriptions/acknowledged", "notifications/tasks"}


async def test_serving_listen_for_tasks_advertises_no_list_changes(url: str) -> None:
    """Listen is served for ``taskIds`` only. FastMCP publishes no list changes on
    this protocol, so the core capabilities are what the same server advertises
    without the extension: no ``listChanged``, no ``resources.subscribe``."""
    plain = FastMCP("plain")

    @plain.tool
    def noop() -> str:
        return "ok"

    ours = (await RawMcp(url, bearer="alice").result("server/discover", {}))["capabilities"]
    async with run_server_async(plain) as plain_url:
        theirs = (await RawMcp(plain_url).result("server/discover", {}))["capabilities"]
    for part in ("tools", "prompts", "resources"):
        assert ours[part] == theirs[part], part
    assert not ours["tools"].get("listChanged") and not ours["resources"].get("subscribe")


async def test_listening_for_tasks_needs_the_extension(url: str) -> None:
    alice = RawMcp(url, bearer="alice")
    task_id = await start(alice, "nap")
    listen = {"notifications": {"taskIds": [task_id]}}
    async with alice.stream("subscriptions/listen", listen, declare_tasks=False) as (_, messages):
        (reply,) = [message async for message in messages]
    assert reply["error"]["code"] == -32021


async def test_bad_task_ids_are_a_clear_error(url: str) -> None:
    alice = RawMcp(url, bearer="alice")
    async with alice.stream(
        "subscriptions/listen", {"notifications": {"taskIds": "not-a-list"}}
    ) as (_, messages):
        (reply,) = [message async for message in messages]
    assert reply["error"]["code"] == -32602


async def test_a_client_that_goes_away_stops_its_watches(url: str) -> None:
    """Closing the stream mid-watch ends every watch; the task can be watched again."""
    alice = RawMcp(url, bearer="alice")
    task_id = await start(alice, "interview")
    listen = {"notifications": {"taskIds": [task_id]}}
    async with alice.stream("subscriptions/listen", listen) as (_, messages):
        assert (await anext(messages))["method"] == "notifications/subscriptions/acknowledged"
        assert (await anext(messages))["params"]["taskId"] == task_id
        assert _watches(), "the stream follows its task"
    # The server runs in this process: its watch tasks are ours to see.
    await eventually(lambda: not _watches(), timeout=60)
    async with alice.stream("subscriptions/listen", listen) as (_, messages):
        assert (await anext(messages))["params"]["notifications"]["taskIds"] == [task_id]
        assert (await anext(messages))["params"]["taskId"] == task_id


def _watches() -> list[asyncio.Task[object]]:
    """The server's running task watches: listen followers and history long polls."""
    names = {"_follow", "next_change"}
    return [task for task in asyncio.all_tasks() if task.get_coro().__name__ in names]


async def test_a_front_end_without_a_worker_pushes_what_another_worker_does(
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """The stream's front end runs no worker: it learns of every change from Temporal."""
    mcp = build(temporal_tasks(run_worker=False))
    async with run_server_async(mcp) as front_end:
        alice = RawMcp(front_end, bearer="alice")
        task_id = await start(alice, "nap")
        listen = {"notifications": {"taskIds": [task_id]}}
        async with alice.stream("subscriptions/listen", listen) as (_, messages):
            assert (await anext(messages))["params"]["notifications"]["taskIds"] == [task_id]
            assert (await anext(messages))["params"]["status"] == "working"
            async with Worker(
                temporal_client, task_queue=task_queue, plugins=[McpTasksPlugin(mcp)]
            ):
                done = await anext(messages)
        assert done["params"]["status"] == "completed"
        assert done["params"]["result"]["content"][0]["text"] == "rested"


async def test_a_leg_ending_its_task_is_followed_without_reads(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    """Once a task's leg runs, its end and the run's close are learned without a read.

    A leg's completion changes nothing a client sees until the workflow records
    it, and the completion event carries the final task, so only the first long
    poll (the history as it was, a ``STARTED`` event among it) may cause a read.
    A watcher reading on every wake (as this one did) reads again for the leg's
    end and the close (2 reads in this test then). The leg ends once the watch
    waits on the history, not after a fixed time: a loaded machine could otherwise
    finish the task before the first read (or the watch) began.
    """
    extension = temporal_tasks()
    mcp = FastMCP("watch")
    mcp.add_extension(extension)
    release = asyncio.Event()

    @mcp.tool(task=True)
    async def doze() -> str:
        await asyncio.wait_for(release.wait(), 60)
        return "rested"

    async def release_once_watching() -> None:
        await eventually(lambda: any(t.get_coro().__name__ == "next_change" for t in _watches()))
        release.set()

    async with Client(mcp) as client:
        task = await call_tool_task(client, "doze", {})
        engine = extension.engine
        workflow_id = workflow_id_for(task.task_id, None)
        while not (await engine.records.describe(task.task_id, workflow_id)).raw.pending_activities:
            await asyncio.sleep(0.02)  # until the leg is scheduled
        seen = await engine.get(task.task_id, None)
        assert seen.status == "working"
        reads = _count_reads(engine)
        releasing = asyncio.create_task(release_once_watching())
        views = [view async for view in watch(engine, task.task_id, None, seen=seen)]
        await releasing
        watch_reads = len(reads)
        final = await engine.get(task.task_id, None)
    assert [view.status for view in views] == ["completed"]
    assert views[-1] == final
    assert watch_reads <= 1


def _count_reads(engine: TaskEngine) -> list[str]:
    """Record each ``tasks/get`` read of ``engine`` from now on (the real read still runs)."""
    reads: list[str] = []
    read = engine.get

    async def counted(task_id: str, scope: str | None) -> GetTaskResult:
        reads.append(task_id)
        return await read(task_id, scope)

    engine.get = counted  # type: ignore[method-assign]
    return reads
