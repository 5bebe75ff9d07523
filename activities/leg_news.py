"""What a leg says while it runs, told in-process to the calls waiting on its task here.

A durable synchronous call (``server.protocol.call_waits``) relays its body's
``report_progress`` and ``ctx.log`` to its client, as an inline call sends them.
Through Temporal a report is a heartbeat (an activity leg) or a signal (a local
leg), which a front end reads back at a bounded rate, and a log line is not
there at all. When the leg runs in the front end's own process -- with a worker
in the front end, eager start and eager activity dispatch put a task's legs
there -- it tells the waiting call directly, and the call then asks Temporal
nothing about its progress: each leg says when it begins and ends (ending with
a question: the task is about to park), and every report and line in between.

One ``LegNews`` per process, made by the extension's lifespan and handed to
its worker's legs (``ToolLegActivity``) and to its waiting calls: no module
state. A call listens *before* it starts (or answers) its task, so nothing a
leg says can come before the call listens; news nobody listens for is dropped.
The legs and the calls may run on different event loops (a worker of the
user's own), so news is handed over with ``call_soon_threadsafe``.

**Bounded**: a call's queue holds at most ``NEWS_BOUND`` reports and lines (a
body that writes faster than its client reads does not grow the front end's
memory). When it is full, progress coalesces -- the oldest report waiting goes,
the newest is kept (set aside until there is room, if only lines wait, or until
the leg begins or ends: news of a leg comes before its end) -- and a
log line is dropped and counted: the client hears one warning line saying how
many, where they were, instead of losing them silently. When a leg begins and
ends always goes in: the call must know whether to read the task in Temporal.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastmcp_temporal.workflows.models import ProgressReport


@dataclass(frozen=True)
class LegBegan:
    """A leg of the task began in this process."""


@dataclass(frozen=True)
class LegEnded:
    """That leg ended; ``asking``: with a question, so the task is about to park."""

    asking: bool


@dataclass(frozen=True)
class LogLine:
    """One ``ctx.log`` of a leg, as ``Context.log`` takes it."""

    message: str
    level: Any
    logger_name: str | None
    extra: Mapping[str, Any] | None


@dataclass(frozen=True)
class LinesDropped:
    """``count`` log lines of the leg did not fit in the call's queue (``NewsQueue``)."""

    count: int

    def as_line(self) -> LogLine:
        """What the call's client hears in their place."""
        return LogLine(
            message=f"{self.count} log line(s) of the tool were dropped here: "
            "it wrote them faster than this call's client read them",
            level="warning",
            logger_name=None,
            extra=None,
        )


#: What a leg tells, in the order it happened.
News = LegBegan | LegEnded | ProgressReport | LogLine | LinesDropped

#: Reports and log lines one call's queue holds, at most (see the module docstring).
NEWS_BOUND = 256


class NewsQueue:
    """One waiting call's news of one task, bounded; read on the loop it was made on."""

    def __init__(self, bound: int = NEWS_BOUND) -> None:
        self._bound = bound
        self._news: deque[News] = deque()
        #: Reports and lines in ``_news``: what the bound counts.
        self._held = 0
        #: The newest report, when the queue was full of lines: it goes in once there is room.
        self._report_aside: ProgressReport | None = None
        self._arrived = asyncio.Event()

    def put(self, news: News) -> None:
        """Queue ``news`` (on the queue's loop), within the bound."""
        if isinstance(news, LegBegan | LegEnded):
            if self._report_aside is not None:  # what the leg said before it ended goes first
                self._news.append(self._report_aside)
                self._held += 1
                self._report_aside = None
            self._news.append(news)
        elif self._held < self._bound:
            self._news.append(news)
            self._held += 1
        elif isinstance(news, ProgressReport):
            self._coalesce(news)
        else:
            self._drop_line()
        self._arrived.set()

    async def get(self) -> News:
        """The oldest news, once there is some."""
        while not self._news:
            self._arrived.clear()
            await self._arrived.wait()
        news = self._news.popleft()
        if not isinstance(news, LegBegan | LegEnded | LinesDropped):
            self._held -= 1
        if self._report_aside is not None and self._held < self._bound:
            self._news.append(self._report_aside)
            self._held += 1
            self._report_aside = None
        return news

    def _coalesce(self, report: ProgressReport) -> None:
        """Full: the oldest report waiting gives way to ``report``, or it waits aside."""
        for index, waiting in enumerate(self._news):
            if isinstance(waiting, ProgressReport):
                del self._news[index]
                self._news.append(report)
                return
        self._report_aside = report

    def _drop_line(self) -> None:
        """Full: count the line in the ``LinesDropped`` still waiting, or a new one (so at
        most one waits, whatever the leg writes)."""
        for index in range(len(self._news) - 1, -1, -1):
            waiting = self._news[index]
            if isinstance(waiting, LinesDropped):
                self._news[index] = LinesDropped(waiting.count + 1)
                return
        self._news.append(LinesDropped(1))


class LegNews:
    """The channel between this process's legs and the calls waiting here."""

    def __init__(self, *, bound: int = NEWS_BOUND) -> None:
        """``bound``: the reports and lines each listening call's queue holds (``NewsQueue``)."""
        self._bound = bound
        self._lock = threading.Lock()
        #: Per workflow id, each listening call's queue and the loop it is read on.
        self._listening: dict[str, list[tuple[asyncio.AbstractEventLoop, NewsQueue]]] = {}

    def listen(self, workflow_id: str) -> NewsQueue:
        """Every piece of news of ``workflow_id``'s legs from now on; ``stop`` it when done."""
        queue = NewsQueue(self._bound)
        with self._lock:
            self._listening.setdefault(workflow_id, []).append((asyncio.get_running_loop(), queue))
        return queue

    def stop(self, workflow_id: str, queue: NewsQueue) -> None:
        with self._lock:
            listeners = [
                entry for entry in self._listening.get(workflow_id, ()) if entry[1] is not queue
            ]
            if listeners:
                self._listening[workflow_id] = listeners
            else:
                self._listening.pop(workflow_id, None)

    def tell(self, workflow_id: str, news: News) -> None:
        """What the leg of ``workflow_id``'s task says, to every call listening for it."""
        with self._lock:
            listeners = list(self._listening.get(workflow_id, ()))
        for loop, queue in listeners:
            # A loop that has closed raises RuntimeError: nobody listens there any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(queue.put, news)
