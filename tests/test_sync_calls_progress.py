"""What a waiting plain call's client hears while its task runs (``server.protocol.call_waits``).

A host's ``tools/call`` with a ``progressToken`` (FastMCP's ``Client`` and Claude
Code send one on every call) gets its body's progress as ``notifications/progress``
and its log lines as ``notifications/message``, as the same body run inline sends
them -- every tool here has an inline twin (``ToolOptions(durable_sync_calls=False)``)
to compare with -- except that reports are coalesced to one a second (the last one
always before the result), and a silent task is kept alive: a notification at least
every ``keepalive_s`` that says what it does and for how long, its progress still
increasing. Legs run in the front end's worker, or (a front end without one) on a
worker of their own, whose progress the front end reads from Temporal.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from fastmcp import Context, FastMCP
from fastmcp.client.logging import LogMessage
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import McpTasksPlugin, TemporalTasks
from fastmcp_temporal.server.tasks.starter import ToolOptions
from fastmcp_temporal.testing import EmbeddedServer
from tests.plain_calls import MODES, PlainClient, progress_sink
from tests.ports import run_server_async

BuildTasks = Callable[..., TemporalTasks]
TOOLS = ("steps", "short_steps", "burst", "short_burst", "chatty", "short_chatty", "silent")


async def steps(ctx: Context, count: int = 3) -> str:
    """A report every 1.5 s: farther apart than one a second, so each one goes on."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, count, f"step {step}")
        await asyncio.sleep(1.5)
    return "done"


async def burst(ctx: Context) -> str:
    """Thirty reports in three seconds: ten a second."""
    for step in range(1, 31):
        await ctx.report_progress(step, 30, f"report {step}")
        await asyncio.sleep(0.1)
    return "done"


async def chatty(ctx: Context) -> str:
    await ctx.info("looking")
    await ctx.report_progress(1, 2)
    await ctx.warning("half way", logger_name="desk", extra={"shelf": 4})
    await ctx.report_progress(2, 2)
    await ctx.debug("found")
    return "found"


async def silent(
    ctx: Context,
    seconds: float = 3.5,
    first: bool = False,
    progress: float = 2,
    total: float | None = 10,
) -> str:
    """Says nothing for ``seconds`` (after one report, ``progress`` of ``total``
    "unpacking", if ``first``)."""
    if first:
        await ctx.report_progress(progress, total, "unpacking")
    await asyncio.sleep(seconds)
    return "quiet"


def build(extension: TemporalTasks) -> FastMCP:
    """Each tool as a default tool (an activity leg) and short (``short_*``: local legs),
    and each with an inline twin (``<name>_inline``)."""
    mcp = FastMCP("progress")
    mcp.add_extension(extension)
    for suffix in ("", "_inline"):
        for body in (steps, burst, chatty, silent):
            mcp.tool(name=f"{body.__name__}{suffix}", task=True)(body)
            if body is not silent:
                mcp.tool(name=f"short_{body.__name__}{suffix}", task=True, timeout=20)(body)
    return mcp


def extension(temporal_tasks: BuildTasks, **options: Any) -> TemporalTasks:
    inline = {f"{name}_inline": ToolOptions(durable_sync_calls=False) for name in TOOLS}
    return temporal_tasks(tools=inline, **options)


@pytest.fixture
async def url(temporal_tasks: BuildTasks) -> AsyncIterator[str]:
    async with run_server_async(build(extension(temporal_tasks))) as served:
        yield served


@pytest.fixture
async def url_keeping_alive(temporal_tasks: BuildTasks) -> AsyncIterator[str]:
    """A server whose waiting calls hear from it at least once a second."""
    async with run_server_async(build(extension(temporal_tasks, keepalive_s=1.0))) as served:
        yield served


@pytest.fixture
async def url_without_worker(
    temporal_tasks: BuildTasks,
    temporal_server: EmbeddedServer,
    temporal_client: TemporalClient,
    task_queue: str,
) -> AsyncIterator[str]:
    """A front end without a worker; the legs run on a worker of their own (in this
    process, but nothing it does reaches the front end but through Temporal)."""
    front = build(extension(temporal_tasks, run_worker=False, keepalive_s=1.0))
    legs = build(extension(temporal_tasks))
    plugin = McpTasksPlugin(legs, credentials_key_dir=temporal_server.data_dir)
    async with (
        Worker(temporal_client, task_queue=task_queue, plugins=[plugin]),
        run_server_async(front) as served,
    ):
        yield served


def increasing(seen: list[tuple[float, float | None, str | None]]) -> bool:
    return all(a[0] < b[0] for a, b in itertools.pairwise(seen))


@pytest.mark.parametrize("tool", ["steps", "short_steps"])
@pytest.mark.parametrize("mode", MODES)
async def test_reports_a_second_or_more_apart_arrive_as_inline(
    url: str, mode: str, tool: str
) -> None:
    for name in (tool, f"{tool}_inline"):
        seen, on_progress = progress_sink()
        async with PlainClient(url, mode=mode, progress_handler=on_progress) as client:  # type: ignore[arg-type]
            assert (await client.call_tool(name, {"count": 3})).data == "done"
        assert seen == [(float(i), 3.0, f"step {i}") for i in (1, 2, 3)], name


@pytest.mark.parametrize("tool", ["burst", "short_burst"])
async def test_a_burst_is_coalesced_to_one_report_a_second_and_the_last_comes_before_the_result(
    url: str, tool: str
) -> None:
    """Thirty reports in three seconds: the inline twin sends thirty, the durable call
    the first, then at most one a second, and always the last -- each one of the
    body's own, in order."""
    inline, on_inline = progress_sink()
    async with PlainClient(url, progress_handler=on_inline) as client:
        assert (await client.call_tool(f"{tool}_inline", {})).data == "done"
    assert len(inline) == 30
    seen, on_progress = progress_sink()
    async with PlainClient(url, progress_handler=on_progress) as client:
        assert (await client.call_tool(tool, {})).data == "done"
    assert seen[0] == (1.0, 30.0, "report 1")
    assert seen[-1] == (30.0, 30.0, "report 30")
    assert increasing(seen) and set(seen) <= set(inline)
    assert 2 <= len(seen) <= 6, seen  # about one a second over ~3 s, and the last


@pytest.mark.parametrize("tool", ["chatty", "short_chatty"])
@pytest.mark.parametrize("mode", MODES)
async def test_log_lines_reach_the_client_as_inline_with_the_progress_between_them(
    url: str, mode: str, tool: str
) -> None:
    """A leg that runs in the front end's worker tells the waiting call what it logs:
    every line goes as the inline call sends it (level, logger, data), in order;
    of its two quick reports the first and the last go, the last before the result."""
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
            url,
            mode=mode,  # type: ignore[arg-type]
            log_handler=on_log,
            progress_handler=on_progress,
        ) as client:
            assert (await client.call_tool(name, {})).data == "found"
        received[name] = events
    durable, inline = received[tool], received[f"{tool}_inline"]
    assert [e for e in durable if e[0] == "log"] == [e for e in inline if e[0] == "log"]
    assert [e for e in durable if e[0] == "progress"] == [
        ("progress", 1.0, 2.0),
        ("progress", 2.0, 2.0),
    ]
    assert durable[0] == inline[0] == ("log", "info", None, {"msg": "looking", "extra": None})


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
            seen, on_progress = progress_sink()
            async with PlainClient(served, progress_handler=on_progress) as client:  # type: ignore[arg-type]
                assert (await client.call_tool("finish", {})).data == "done"
            received.append([progress for progress, _, _ in seen])
    assert received == [[1.0]] * 5  # inline, each call gets its one report


@pytest.mark.parametrize("mode", MODES)
async def test_a_silent_task_is_kept_alive_with_what_it_does_and_for_how_long(
    url_keeping_alive: str, mode: str
) -> None:
    """Nothing from the body for 3.5 s, ``keepalive_s=1``: the client still hears from
    the server about once a second, each notification's progress above the last
    (MCP), saying the tool runs and how long it has. Inline, it hears nothing."""
    seen, on_progress = progress_sink()
    client = PlainClient(url_keeping_alive, mode=mode, progress_handler=on_progress)  # type: ignore[arg-type]
    async with client:
        assert (await client.call_tool("silent_inline", {})).data == "quiet"
        assert seen == []
        assert (await client.call_tool("silent", {})).data == "quiet"
    assert len(seen) >= 2, seen
    assert increasing(seen)
    assert all(message and "The tool is running" in message for _, _, message in seen), seen
    assert all(message and "since the call began" in message for _, _, message in seen)


async def test_a_keepalive_goes_on_from_the_bodys_last_report(url_keeping_alive: str) -> None:
    """After one report (2 of 10, "unpacking") the body is silent: each keepalive says
    so, its progress a step above the last one sent, its total the body's."""
    seen, on_progress = progress_sink()
    async with PlainClient(url_keeping_alive, progress_handler=on_progress) as client:
        assert (await client.call_tool("silent", {"first": True})).data == "quiet"
    assert seen[0] == (2.0, 10.0, "unpacking")
    keepalives = seen[1:]
    assert len(keepalives) >= 2, seen
    assert increasing(seen)
    assert all(2 < progress < 2.1 and total == 10.0 for progress, total, _ in keepalives)
    assert all(message and message.startswith("unpacking (") for _, _, message in keepalives)


async def test_a_keepalive_after_a_report_of_the_whole_shows_no_total(
    url_keeping_alive: str,
) -> None:
    """A body that reported 10 of 10 and goes on: the keepalives rise above 10, so they
    drop the total rather than claim more than all of it."""
    seen, on_progress = progress_sink()
    async with PlainClient(url_keeping_alive, progress_handler=on_progress) as client:
        answer = await client.call_tool("silent", {"first": True, "progress": 10})
    assert answer.data == "quiet"
    assert seen[0] == (10.0, 10.0, "unpacking")
    assert len(seen) >= 3, seen
    assert increasing(seen)
    assert all(progress > 10 and total is None for progress, total, _ in seen[1:])


async def test_keepalives_go_on_after_a_huge_progress_value(url_keeping_alive: str) -> None:
    """At 2e13 a step of 0.001 is lost to rounding: the keepalive rises by the least a
    float can instead, and keeps coming (before, they stopped)."""
    seen, on_progress = progress_sink()
    async with PlainClient(url_keeping_alive, progress_handler=on_progress) as client:
        arguments = {"first": True, "progress": 2e13, "total": None}
        assert (await client.call_tool("silent", arguments)).data == "quiet"
    assert seen[0] == (2e13, None, "unpacking")
    assert len(seen) >= 3, seen
    assert increasing(seen)


async def test_a_leg_on_another_worker_reports_through_temporal_in_order(
    url_without_worker: str,
) -> None:
    """The front end reads the task while it waits (at most once a second): reports of a
    leg on another worker, a second and a half apart, reach the client, in order, and
    the last one before the result; between them, keepalives (once a second here)."""
    seen, on_progress = progress_sink()
    async with PlainClient(url_without_worker, progress_handler=on_progress) as client:
        assert (await client.call_tool("steps", {"count": 3})).data == "done"
    assert seen[-1] == (3.0, 3.0, "step 3")
    assert increasing(seen)
    reports = [report for report in seen if "since the call began" not in (report[2] or "")]
    assert set(reports) <= {(float(i), 3.0, f"step {i}") for i in (1, 2, 3)}, seen
    assert len(reports) >= 2, seen


async def test_a_silent_leg_on_another_worker_is_kept_alive(url_without_worker: str) -> None:
    seen, on_progress = progress_sink()
    async with PlainClient(url_without_worker, progress_handler=on_progress) as client:
        assert (await client.call_tool("silent", {})).data == "quiet"
    assert len(seen) >= 2, seen
    assert increasing(seen)
