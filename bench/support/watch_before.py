"""The listen watcher as it was before, for A/B rows in one interleaved run.

Before, every wake of a task's history long poll was followed by a full read
(``TaskEngine.get``: a ``describe``, the memo, the leg's heartbeat), whatever
the new events were, and the final state was read like any other. Now a wake
reads only when its events can change what ``tasks/get`` shows, and a run's
completion event gives the final task itself (``server/tasks/task_watch.py``).

``serve_tasks_the_old_way`` makes the listen handler of every server in this
process follow the task ids put in the returned set the old way, so both
watchers run on the same server, worker and dev server, side by side.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

from temporalio.service import RPCError

from fastmcp_temporal.server.core.wire import GetTaskResult
from fastmcp_temporal.server.protocol import listen
from fastmcp_temporal.server.tasks import task_watch
from fastmcp_temporal.server.tasks.engine import TaskEngine, workflow_id_for
from fastmcp_temporal.server.tasks.poll_interval import FLOOR_MS


async def watch_reading_every_wake(
    engine: TaskEngine,
    task_id: str,
    scope: str | None,
    *,
    progress: bool = False,
    seen: GetTaskResult | None = None,
) -> AsyncIterator[GetTaskResult]:
    """The old ``task_watch.watch``: one ``tasks/get`` read per wake or progress tick."""
    current = seen if seen is not None else await engine.get(task_id, scope)
    if seen is None:
        yield current
    history = task_watch.HistoryTail(engine, workflow_id_for(task_id, scope))
    waiting: asyncio.Task[object] | None = None
    try:
        while not task_watch.is_terminal(current):
            if waiting is None:
                waiting = asyncio.ensure_future(history.next_change())
            timer = None
            if progress and current.status == "working":
                timer = (current.poll_interval_ms or FLOOR_MS) / 1000
            done, _ = await asyncio.wait({waiting}, timeout=timer)
            if waiting in done:
                woke_with_events = waiting.result() is not None
                waiting = None
                if not woke_with_events:
                    continue
            latest = await engine.get(task_id, scope)
            if task_watch._visible(latest) != task_watch._visible(current):
                yield latest
            current = latest
    finally:
        if waiting is not None:
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError, RPCError):
                await waiting


@contextlib.contextmanager
def serve_tasks_the_old_way() -> Iterator[set[str]]:
    """Route the listen watches of the task ids added to the yielded set to the old watcher."""
    old_way: set[str] = set()
    current = listen.watch

    def routed(
        engine: TaskEngine,
        task_id: str,
        scope: str | None,
        *,
        progress: bool = False,
        seen: GetTaskResult | None = None,
    ) -> AsyncIterator[GetTaskResult]:
        chosen = watch_reading_every_wake if task_id in old_way else current
        return chosen(engine, task_id, scope, progress=progress, seen=seen)

    listen.watch = routed  # type: ignore[assignment]
    try:
        yield old_way
    finally:
        listen.watch = current
