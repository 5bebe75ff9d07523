"""Durable synchronous calls (``server.protocol.sync_calls``, issue 27).

A client that does not declare the tasks extension -- a FastMCP ``Client``
without ``TasksClientExtension``, on 2025-11-25 (``mode="legacy"``) and
2026-07-28 (``mode="auto"``), over streamable HTTP -- calls ``task=True`` tools.
Each call runs as the task's workflow on the session's Temporal (the test's own
queue shows it) and answers what the same body answers inline: every durable
tool has a twin switched off with ``ToolOptions(durable_sync_calls=False)``, and
both are compared.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import mcp_types
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.client.logging import LogMessage
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp import Client as SdkClient
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.activities import leg_hints
from fastmcp_temporal.client_wire import IDEMPOTENCY_KEY_META
from fastmcp_temporal.server.protocol import sync_calls
from fastmcp_temporal.server.tasks.starter import ToolOptions
from tests.ports import run_server_async

BuildTasks = Callable[..., TemporalTasks]


class PlainClient(Client):  # type: ignore[type-arg]
    """A FastMCP ``Client`` that declares no tasks extension, as hosts' clients do.

    The suite makes every ``Client`` declare it (``tests/conftest.py``); FastMCP's
    own ``ProxyClient`` turns that off the same way.
    """

    _auto_internal_extensions = False


MODES = ["legacy", "auto"]  # 2025-11-25 and 2026-07-28
#: ``(progress, total, message)`` of each ``notifications/progress``, as received.
Progress = list[tuple[float, float | None, str | None]]
ProgressHandler = Callable[[float, float | None, str | None], Awaitable[None]]
TWINS = (
    "report",
    "fails",
    "crashes",
    "refuses",
    "steps",
    "short_steps",
    "burst",
    "activity_burst",
    "chatty",
    "short_chatty",
)


class Report(BaseModel):
    topic: str
    pages: int


def tools(mcp: FastMCP, runs: list[str], suffix: str) -> None:
    """The tools under test, registered as ``<name><suffix>`` (one body each)."""

    @mcp.tool(name=f"report{suffix}", task=True)
    async def report(ctx: Context, topic: str, pages: int = 3) -> Report:
        runs.append(f"report{suffix}:{'task' if ctx.is_background_task else 'inline'}")
        return Report(topic=topic, pages=pages)

    @mcp.tool(name=f"fails{suffix}", task=True)
    async def fails() -> str:
        raise ToolError("the archive is closed")

    @mcp.tool(name=f"crashes{suffix}", task=True)
    async def crashes() -> str:
        raise RuntimeError("internal detail")

    @mcp.tool(name=f"refuses{suffix}", task=True)
    async def refuses() -> str:
        raise MCPError(code=-32042, message="not today", data={"why": "closed"})

    @mcp.tool(name=f"steps{suffix}", task=True)
    async def steps(ctx: Context, count: int = 3) -> str:
        for step in range(1, count + 1):
            await ctx.report_progress(step, count, f"step {step}")
            await asyncio.sleep(1.5)  # past the heartbeat throttle: each report is seen
        return "done"

    # A short tool (a timeout under 30 s): its legs are local, its progress is signals.
    mcp.tool(name=f"short_steps{suffix}", task=True, timeout=20)(steps)

    async def chatty(ctx: Context) -> str:
        await ctx.info("looking")
        await ctx.report_progress(1, 2)
        await ctx.warning("half way", logger_name="desk", extra={"shelf": 4})
        await ctx.report_progress(2, 2)
        await ctx.debug("found")
        return "found"

    mcp.tool(name=f"chatty{suffix}", task=True)(chatty)
    mcp.tool(name=f"short_chatty{suffix}", task=True, timeout=20)(chatty)

    async def burst(ctx: Context) -> str:
        for step in range(1, 6):
            await ctx.report_progress(step, 5, f"report {step}")
        return "done"

    mcp.tool(name=f"burst{suffix}", task=True, timeout=20)(burst)
    # A default tool: its leg is an activity, which mostly runs in the front end's worker.
    mcp.tool(name=f"activity_burst{suffix}", task=True)(burst)


def build(extension: TemporalTasks, runs: list[str], **server: Any) -> FastMCP:
    mcp = FastMCP("sync", **server)
    mcp.add_extension(extension)
    tools(mcp, runs, "")
    tools(mcp, runs, "_inline")

    @mcp.tool(task=False)
    async def plain() -> str:
        return "never a task"

    @mcp.tool(task=True)
    async def outer(ctx: Context) -> str:
        nested = await ctx.fastmcp.call_tool("report", {"topic": "nested"})
        return f"{ctx.is_background_task}:{nested.structured_content}"

    return mcp


def extension(temporal_tasks: BuildTasks, **options: Any) -> TemporalTasks:
    inline = {f"{name}_inline": ToolOptions(durable_sync_calls=False) for name in TWINS}
    return temporal_tasks(tools=inline, **options)


@pytest.fixture
def runs() -> list[str]:
    """Each body run of a ``report`` tool: ``<tool name>:task`` in a task leg, else ``:inline``.

    Where the body ran is the strong signal that a call was (not) durable: the
    workflow list is eventually consistent, a body's own ``is_background_task`` is not.
    """
    return []


@pytest.fixture
async def url(temporal_tasks: BuildTasks, runs: list[str]) -> AsyncIterator[str]:
    served = build(extension(temporal_tasks), runs, mask_error_details=True)
    async with run_server_async(served) as server_url:
        yield server_url


async def workflows(temporal_client: TemporalClient, task_queue: str) -> list[str]:
    """The task workflows started on this test's queue so far (visibility is eventual)."""
    query = f"TaskQueue = '{task_queue}'"
    return [w.id async for w in temporal_client.list_workflows(query)]


async def count_workflows(
    temporal_client: TemporalClient, task_queue: str, expected: int, timeout: float = 10
) -> int:
    """How many workflows the queue has once it reached ``expected`` (or ``timeout`` passed)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = len(await workflows(temporal_client, task_queue))
        if found >= expected or loop.time() > deadline:
            return found
        await asyncio.sleep(0.2)


def wire(result: mcp_types.CallToolResult) -> dict[str, Any]:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


@pytest.mark.parametrize("mode", MODES)
async def test_results_equal_the_inline_ones_and_each_call_is_a_workflow(
    url: str, mode: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    async with PlainClient(url, mode=mode) as client:  # type: ignore[arg-type]
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        for name, arguments in [("report", {"topic": "tides"}), ("fails", {}), ("crashes", {})]:
            durable = await client.call_tool_mcp(name, arguments)
            inline = await client.call_tool_mcp(f"{name}_inline", arguments)
            shown = json.dumps(wire(inline)).replace(f"{name}_inline", name)
            assert wire(durable) == json.loads(shown), name
        typed = await client.call_tool("report", {"topic": "tides", "pages": "7"})
        assert typed.structured_content == {"topic": "tides", "pages": 7}
        # The client builds its own type from the output schema: compare every field.
        assert Report.model_validate(typed.data, from_attributes=True) == Report(
            topic="tides", pages=7
        )
        # A raised MCPError fails a task; the call answers that error (inline FastMCP
        # masks it into an isError result: docs/differences.md).
        with pytest.raises(MCPError) as refused:
            await client.call_tool_mcp("refuses", {})
        assert refused.value.error.code == -32042
        assert refused.value.error.data == {"why": "closed"}
    # report, fails, crashes, refuses, and the typed report: five tasks, no inline twin.
    assert runs == ["report:task", "report_inline:inline", "report:task"]
    assert await count_workflows(temporal_client, task_queue, 5) == 5
    assert all(
        workflow_id.startswith("mcp-")
        for workflow_id in await workflows(temporal_client, task_queue)
    )


@pytest.mark.parametrize("mode", MODES)
async def test_invalid_arguments_are_rejected_before_anything_starts(
    url: str, mode: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    """No workflow for a call FastMCP rejects. Checked behind a fence, not a fixed wait: a
    valid call after them starts one; once it is listed, one of theirs would be too."""
    async with PlainClient(url, mode=mode) as client:  # type: ignore[arg-type]
        durable = await client.call_tool_mcp("report", {"topic": "tides", "pages": "many"})
        inline = await client.call_tool_mcp("report_inline", {"topic": "tides", "pages": "many"})
        assert wire(durable) == wire(inline)  # FastMCP's own validation answer, word for word
        assert durable.is_error
        assert (await client.call_tool("plain", {})).data == "never a task"
        await client.call_tool("report", {"topic": "fence"})
    assert runs == ["report:task"]  # the fence; the rejected calls ran nothing
    assert await count_workflows(temporal_client, task_queue, 1) == 1


async def test_nested_calls_run_inline_inside_the_durable_call(
    url: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    async with PlainClient(url) as client:
        result = await client.call_tool("outer", {})
    # The client's call is a task (its body sees a background task); the tool it calls is not.
    assert result.data == "True:{'topic': 'nested', 'pages': 3}"
    assert runs == ["report:inline"]  # the nested body ran in the outer leg, not in its own
    assert await count_workflows(temporal_client, task_queue, 1) == 1


class FrontDesk(Middleware):
    """Answers a call of ``front_desk`` by calling the ``task=True`` tool ``report`` itself."""

    async def on_call_tool(
        self,
        context: MiddlewareContext[mcp_types.CallToolRequestParams],
        call_next: CallNext[mcp_types.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        if context.message.name != "front_desk" or context.fastmcp_context is None:
            return await call_next(context)
        return await context.fastmcp_context.fastmcp.call_tool("report", {"topic": "desk"})


@pytest.mark.parametrize("mode", MODES)
async def test_a_task_tool_that_middleware_calls_runs_inline(
    temporal_tasks: BuildTasks,
    mode: str,
    runs: list[str],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """Only the tool the client named is the client's call: middleware that calls a
    ``task=True`` tool itself gets it inline, as a tool calling another tool does."""
    mcp = build(extension(temporal_tasks), runs)
    mcp.add_middleware(FrontDesk())

    @mcp.tool(task=False)
    async def front_desk() -> Report:
        raise AssertionError("the middleware answers this call")

    async with run_server_async(mcp) as served, PlainClient(served, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.call_tool_mcp("front_desk", {})
        # A durable call after it: once its workflow is listed, one of the first would be.
        await client.call_tool("report", {"topic": "fence"})
    assert result.structured_content == {"topic": "desk", "pages": 3}
    assert runs == ["report:inline", "report:task"]  # the middleware's call ran in the request
    assert await count_workflows(temporal_client, task_queue, 1) == 1  # the fence only


@pytest.mark.parametrize("tool", ["steps", "short_steps"])
@pytest.mark.parametrize("mode", MODES)
async def test_progress_reaches_the_client_in_order(url: str, mode: str, tool: str) -> None:
    for name in (tool, f"{tool}_inline"):
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(
            progress: float,
            total: float | None,
            message: str | None,
            seen: list[tuple[float, float | None, str | None]] = seen,
        ) -> None:
            seen.append((progress, total, message))

        async with PlainClient(url, mode=mode, progress_handler=on_progress) as client:  # type: ignore[arg-type]
            assert (await client.call_tool(name, {"count": 3})).data == "done"
        assert seen == [(float(i), 3.0, f"step {i}") for i in (1, 2, 3)], name


def progress_sink() -> tuple[Progress, ProgressHandler]:
    """Where a client's ``progress_handler`` puts each report, as received."""
    seen: Progress = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    return seen, on_progress


def count_full_waits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Task ids whose wait went past the close event alone (``sync_calls._until_answerable``)."""
    full_waits: list[str] = []
    original = sync_calls._until_answerable

    async def counted(engine: Any, task_id: str, *args: Any, **kwargs: Any) -> Any:
        full_waits.append(task_id)
        return await original(engine, task_id, *args, **kwargs)

    monkeypatch.setattr(sync_calls, "_until_answerable", counted)
    return full_waits


@pytest.mark.parametrize("mode", MODES)
async def test_every_report_arrives_as_inline_while_the_wait_reads_once(
    url: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Legs that run where the call waits (eager start: a short tool's local legs, and a
    default tool's activity leg, which eager activity dispatch hands to this worker) tell
    it of each report in-process (``leg_hints``): the wait reads only the task's close
    event, even with a ``progressToken`` (FastMCP's ``Client`` sends one on every call), and
    every report arrives, none coalesced, as inline."""
    full_waits = count_full_waits(monkeypatch)
    monkeypatch.setattr(sync_calls, "LEG_HERE_WAIT_S", 60)  # a loaded machine's leg begins late
    for name in ("burst", "activity_burst", "burst_inline", "activity_burst_inline"):
        seen, on_progress = progress_sink()
        async with PlainClient(url, mode=mode, progress_handler=on_progress) as client:
            assert (await client.call_tool(name, {})).data == "done"
        assert seen == [(float(i), 5.0, f"report {i}") for i in range(1, 6)], name
    assert full_waits == []


@pytest.mark.parametrize("tool", ["chatty", "short_chatty"])
@pytest.mark.parametrize("mode", MODES)
async def test_log_lines_reach_the_client_as_inline_in_order_with_progress(
    url: str, mode: str, tool: str
) -> None:
    """A leg that runs in the front end's worker (here: both kinds) tells the waiting call
    what it logs (``leg_hints``), which sends each line as the inline call does
    (``notifications/message``: level, logger, data), in order with its progress."""
    received: dict[str, list[tuple[Any, ...]]] = {}
    for name in (tool, f"{tool}_inline"):
        events: list[tuple[Any, ...]] = []

        async def on_log(message: LogMessage, events: list[tuple[Any, ...]] = events) -> None:
            events.append(("log", message.level, message.logger, message.data))

        async def on_progress(
            progress: float,
            total: float | None,
            message: str | None,
            events: list[tuple[Any, ...]] = events,
        ) -> None:
            events.append(("progress", progress, total))

        async with PlainClient(
            url, mode=mode, log_handler=on_log, progress_handler=on_progress
        ) as client:
            assert (await client.call_tool(name, {})).data == "found"
        received[name] = events
    assert received[tool] == received[f"{tool}_inline"]
    assert [event[0] for event in received[tool]] == ["log", "progress", "log", "progress", "log"]
    assert received[tool][2] == (
        "log",
        "warning",
        "desk",
        {"msg": "half way", "extra": {"shelf": 4}},
    )


async def test_an_activity_leg_not_seen_to_begin_here_leaves_its_progress_to_the_full_wait(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any worker of the queue may run a default tool's leg: one that does not begin in
    the front end's worker within ``LEG_HERE_WAIT_S`` reports where only the full wait
    reads (its heartbeat), so the wait becomes the full wait; the reports still arrive."""
    full_waits = count_full_waits(monkeypatch)
    seen, on_progress = progress_sink()
    async with PlainClient(url, progress_handler=on_progress) as client:
        monkeypatch.setattr(sync_calls, "LEG_HERE_WAIT_S", 60)  # a loaded machine's leg begins late
        assert (await client.call_tool("steps", {"count": 1})).data == "done"
        assert full_waits == []  # its leg began here
        monkeypatch.setattr(sync_calls, "LEG_HERE_WAIT_S", 0.2)
        monkeypatch.setattr(leg_hints, "started", lambda workflow_id: None)  # as if elsewhere
        assert (await client.call_tool("steps", {"count": 1})).data == "done"
    assert len(full_waits) == 1
    assert seen == [(1.0, 1.0, "step 1")] * 2


@pytest.mark.parametrize("tool", ["chatty", "short_chatty"])
async def test_a_call_that_hears_of_its_task_after_the_leg_ran_still_gets_its_lines(
    url: str,
    tool: str,
    temporal_client: TemporalClient,
    task_queue: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The start's answer hands the call its task and the worker the task's first workflow
    task; nothing orders the two. Here the call hears of its task only once the task has
    ended: the leg's lines and reports still reach it, in order, as inline."""
    create_task = sync_calls.create_task

    async def late(*args: Any, **kwargs: Any) -> Any:
        created = await create_task(*args, **kwargs)
        closed = f"TaskQueue = '{task_queue}' AND ExecutionStatus = 'Completed'"
        while not [w async for w in temporal_client.list_workflows(closed)]:
            await asyncio.sleep(0.05)
        return created

    monkeypatch.setattr(sync_calls, "create_task", late)
    events: list[tuple[Any, ...]] = []

    async def on_log(message: LogMessage) -> None:
        events.append(("log", message.level, message.logger, message.data))

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append(("progress", progress, total))

    async with PlainClient(url, log_handler=on_log, progress_handler=on_progress) as client:
        assert (await client.call_tool(tool, {})).data == "found"
    assert [event[0] for event in events] == ["log", "progress", "log", "progress", "log"]


@pytest.mark.parametrize("hints", [True, False], ids=["hints", "no-hints"])
async def test_past_the_bound_progress_comes_from_the_history_in_order_and_once(
    url: str, hints: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short task still running after ``END_HERE_WAIT_S`` is waited for as before: its
    progress then comes from the history, after what the hints relayed and never again.
    Without hints (its leg ran on another worker) every report still arrives, later."""
    full_waits = count_full_waits(monkeypatch)
    monkeypatch.setattr(sync_calls, "END_HERE_WAIT_S", 0.5)
    if not hints:
        monkeypatch.setattr(leg_hints, "reported", lambda workflow_id, report: None)
    seen, on_progress = progress_sink()
    async with PlainClient(url, progress_handler=on_progress) as client:
        assert (await client.call_tool("short_steps", {"count": 3})).data == "done"
    assert seen == [(float(i), 3.0, f"step {i}") for i in (1, 2, 3)]
    assert len(full_waits) == 1


@pytest.mark.parametrize("short", [True, False], ids=["local-leg", "activity-leg"])
async def test_a_report_made_just_before_returning_reaches_the_client(
    temporal_tasks: BuildTasks, short: bool
) -> None:
    mcp = FastMCP("last-report")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True, timeout=20 if short else None)
    async def finish(ctx: Context) -> str:
        await ctx.report_progress(1, 1, "done")
        return "done"

    received: list[list[float]] = []
    async with run_server_async(mcp) as served:
        for _ in range(5):
            seen: list[float] = []

            async def on_progress(
                progress: float, total: float | None, message: str | None, seen: list[float] = seen
            ) -> None:
                seen.append(progress)

            async with PlainClient(served, progress_handler=on_progress) as client:  # type: ignore[arg-type]
                assert (await client.call_tool("finish", {})).data == "done"
            received.append(seen)
    assert received == [[1.0]] * 5  # inline, each call gets its one report


async def test_the_server_wide_switch_turns_it_off(
    temporal_tasks: BuildTasks, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    mcp = build(temporal_tasks(durable_sync_calls=False), runs)
    async with run_server_async(mcp) as served, PlainClient(served) as client:
        report = await client.call_tool("report", {"topic": "x"})
    assert report.structured_content == {"topic": "x", "pages": 3}
    assert runs == ["report:inline"]  # ran in the request: no task leg ran it
    assert await workflows(temporal_client, task_queue) == []


@pytest.mark.parametrize(
    ("argument", "durable"), [(None, False), (True, True)], ids=["env-alone", "argument-wins"]
)
async def test_the_environment_variable_turns_it_off_unless_the_argument_turns_it_on(
    monkeypatch: pytest.MonkeyPatch,
    temporal_tasks: BuildTasks,
    argument: bool | None,
    durable: bool,
    runs: list[str],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """``FASTMCP_TEMPORAL_DURABLE_SYNC_CALLS=false`` is the server-wide default that
    ``TemporalTasks(durable_sync_calls=...)`` overrides (the settings' precedence)."""
    monkeypatch.setenv("FASTMCP_TEMPORAL_DURABLE_SYNC_CALLS", "false")
    options = {} if argument is None else {"durable_sync_calls": argument}
    mcp = build(temporal_tasks(**options), runs)
    async with run_server_async(mcp) as served, PlainClient(served) as client:
        report = await client.call_tool("report", {"topic": "x"})
    assert report.structured_content == {"topic": "x", "pages": 3}
    assert runs == ["report:task" if durable else "report:inline"]
    assert await count_workflows(temporal_client, task_queue, int(durable)) == int(durable)


@pytest.mark.parametrize("off_by", ["argument", "environment"])
async def test_a_tools_own_switch_makes_it_durable_when_the_server_wide_one_is_off(
    monkeypatch: pytest.MonkeyPatch,
    temporal_tasks: BuildTasks,
    off_by: str,
    runs: list[str],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """``ToolOptions(durable_sync_calls=True)`` wins over the server-wide ``False``
    (``ToolOptions``: ``None`` means the extension's); the other tools stay inline."""
    options: dict[str, Any] = {"tools": {"report": ToolOptions(durable_sync_calls=True)}}
    if off_by == "environment":
        monkeypatch.setenv("FASTMCP_TEMPORAL_DURABLE_SYNC_CALLS", "false")
    else:
        options["durable_sync_calls"] = False
    mcp = build(temporal_tasks(**options), runs)
    async with run_server_async(mcp) as served, PlainClient(served) as client:
        report = await client.call_tool("report", {"topic": "x"})
        outer = await client.call_tool("outer", {})
    assert report.structured_content == {"topic": "x", "pages": 3}
    assert outer.data == "False:{'topic': 'nested', 'pages': 3}"  # `outer` ran inline
    assert runs == ["report:task", "report:inline"]  # the second: `outer`'s nested call
    assert await count_workflows(temporal_client, task_queue, 1) == 1


async def test_an_idempotency_key_attaches_to_the_calls_task(
    url: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    meta = {IDEMPOTENCY_KEY_META: "sync-call-key-1"}
    async with PlainClient(url) as client:
        first = await client.call_tool_mcp("report", {"topic": "once"}, meta=meta)
        again = await client.call_tool_mcp("report", {"topic": "once"}, meta=meta)
    assert wire(first) == wire(again)
    assert runs == ["report:task"]  # the retry read the task's result; the body ran once
    assert await count_workflows(temporal_client, task_queue, 1) == 1


async def test_the_mcp_sdks_own_client_gets_the_inline_result(
    url: str, temporal_client: TemporalClient, task_queue: str
) -> None:
    """The MCP Python SDK's ``Client`` (no FastMCP on the client side), with progress."""
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with SdkClient(url) as client:
        durable = await client.call_tool("report", {"topic": "sdk"})
        inline = await client.call_tool("report_inline", {"topic": "sdk"})
        await client.call_tool("steps", {"count": 2}, progress_callback=on_progress)
    assert wire(durable) == wire(inline)
    assert seen == [1.0, 2.0]
    assert await count_workflows(temporal_client, task_queue, 2) == 2
