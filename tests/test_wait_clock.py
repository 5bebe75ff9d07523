"""One clock for the wait, a read budget per second whatever the tick, bounded leg news.

``timing.TICK_S`` paces the leg's heartbeat, the worker's heartbeat throttle, the
watch of a running task and the waiting calls' read loop; the read budget is a
rate (``call_reads.ReadBudget``); a call without a ``progressToken`` costs no task
on a tick; and a call's queue of leg news is bounded (``leg_news.NewsQueue``).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable

import pytest
from fastmcp import FastMCP
from fastmcp.server.context import Context

from fastmcp_temporal.activities.leg_news import (
    LegBegan,
    LegEnded,
    LegNews,
    LinesDropped,
    LogLine,
    News,
)
from fastmcp_temporal.activities.progress import ProgressSignals
from fastmcp_temporal.activities.tool_leg import ToolLegActivity
from fastmcp_temporal.server.protocol.call_reads import ReadBudget
from fastmcp_temporal.server.protocol.call_waits import CallWait, WaitingCalls
from fastmcp_temporal.server.tasks.task_watch import PROGRESS_READ_FLOOR_MS
from fastmcp_temporal.server.temporal.in_process_worker import DEFAULT_WORKER_OPTIONS
from fastmcp_temporal.server.temporal.plugin import McpTasksPlugin
from fastmcp_temporal.timing import TICK, TICK_S
from fastmcp_temporal.workflows.models import ProgressReport


def default_of(function: Callable[..., object], parameter: str) -> object:
    return inspect.signature(function).parameters[parameter].default


def test_the_leg_the_worker_and_the_watch_share_the_one_tick() -> None:
    assert DEFAULT_WORKER_OPTIONS["max_heartbeat_throttle_interval"] == TICK
    assert TICK.total_seconds() == TICK_S
    assert default_of(ToolLegActivity.__init__, "heartbeat_interval_s") == TICK_S
    assert default_of(McpTasksPlugin.__init__, "heartbeat_interval_s") == TICK_S
    assert default_of(ProgressSignals.__init__, "min_interval_s") == TICK_S
    assert PROGRESS_READ_FLOOR_MS == TICK_S * 1000


@pytest.mark.parametrize("tick_s", [0.25, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("reads_per_second", [1, 3, 10])
def test_the_read_budget_is_per_second_whatever_the_tick(
    tick_s: float, reads_per_second: int
) -> None:
    """Every call always due, every read done within its tick: 8 s read 8 seconds' worth."""
    budget = ReadBudget(reads_per_second, tick_s)
    seconds = 8
    reads = 0
    for _ in range(round(seconds / tick_s)):
        started = budget.this_tick(under_way=0)
        budget.spend(started)
        reads += started
    assert reads == reads_per_second * seconds


def test_reads_under_way_hold_back_new_ones() -> None:
    budget = ReadBudget(reads_per_second=4, tick_s=0.5)
    assert budget.this_tick(under_way=4) == 0
    # What the blocked tick earned is there once the reads are done (within one tick's more).
    assert budget.this_tick(under_way=0) == 3


async def test_a_call_without_a_progress_token_costs_no_task_on_a_tick() -> None:
    calls = WaitingCalls(None, None, keepalive_s=30.0, reads_per_second=5)  # type: ignore[arg-type]
    # Outside any request: no progressToken, as a client that sent none.
    async with CallWait(calls, Context(fastmcp=FastMCP("no-token"))) as call:
        assert not call.relay.wanted
        scheduled: list[object] = []
        calls.read_loop.tend(asyncio.get_running_loop().time() + 60, scheduled.append)
        assert scheduled == []  # no nudge, and no read: it awaits no task yet
        before = asyncio.all_tasks()
        call.relay.nudge()
        assert asyncio.all_tasks() == before


def line(n: int) -> LogLine:
    return LogLine(message=f"line {n}", level="info", logger_name=None, extra=None)


def report(n: int) -> ProgressReport:
    return ProgressReport(progress=float(n), message=f"step {n}")


async def told_from_a_leg_thread(bound: int, told: list[News]) -> list[News]:
    """``told`` by a leg on another thread (as a worker of the user's own), as a call hears it."""
    news = LegNews(bound=bound)
    queue = news.listen("wf")
    leg = threading.Thread(target=lambda: [news.tell("wf", item) for item in told])
    leg.start()
    await asyncio.to_thread(leg.join)
    await asyncio.sleep(0)  # the handovers (call_soon_threadsafe) run
    heard: list[News] = []
    for _ in range(len(told)):  # at most as many as told
        try:
            heard.append(await asyncio.wait_for(queue.get(), 0.05))
        except TimeoutError:
            break
    news.stop("wf", queue)
    return heard


async def test_the_newest_report_set_aside_goes_in_once_a_line_is_read() -> None:
    news = LegNews(bound=1)
    queue = news.listen("wf")
    for item in (line(1), report(1), report(2)):
        news.tell("wf", item)
    await asyncio.sleep(0)
    assert await queue.get() == line(1)
    assert await queue.get() == report(2)
    news.stop("wf", queue)


async def test_a_leg_that_writes_without_end_grows_no_queue() -> None:
    """Lines and reports by the thousand, nobody reading: one count of the lines waits."""
    told: list[News] = [item for n in range(2000) for item in (line(n), report(n))]
    heard = await told_from_a_leg_thread(4, [*told, LegEnded(asking=False)])
    assert heard == [
        line(0),
        line(1),
        LinesDropped(1998),  # one count, however the lines and reports alternate
        report(1998),  # the oldest reports gave way to the newest
        report(1999),
        LegEnded(asking=False),
    ]


async def test_within_the_bound_every_piece_of_news_arrives_in_order() -> None:
    told: list[News] = [LegBegan(), report(1), line(1), report(2), LegEnded(asking=False)]
    assert await told_from_a_leg_thread(10, told) == told


async def test_a_full_queue_coalesces_progress_and_keeps_the_ending() -> None:
    told: list[News] = [LegBegan(), *(report(n) for n in range(1, 6)), LegEnded(asking=True)]
    heard = await told_from_a_leg_thread(2, told)
    # The oldest reports gave way to the newest; when the leg began and ended is never dropped.
    assert heard == [LegBegan(), report(4), report(5), LegEnded(asking=True)]


async def test_lines_that_do_not_fit_are_counted_and_said_and_the_newest_report_waits() -> None:
    told: list[News] = [
        LegBegan(),
        line(1),
        line(2),
        report(1),
        line(3),
        report(2),
        line(4),
        LegEnded(asking=False),
    ]
    heard = await told_from_a_leg_thread(2, told)
    assert heard == [
        LegBegan(),
        line(1),
        line(2),
        LinesDropped(2),
        report(2),  # set aside while only lines waited; in before the leg's end
        LegEnded(asking=False),
    ]
    dropped = LinesDropped(2).as_line()
    assert dropped.level == "warning" and "2 log line(s)" in dropped.message
