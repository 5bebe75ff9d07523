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
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
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


#: What a leg tells, in the order it happened.
News = LegBegan | LegEnded | ProgressReport | LogLine


class NewsQueue(asyncio.Queue[News]):
    """One waiting call's news of one task."""


class LegNews:
    """The channel between this process's legs and the calls waiting here."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Per workflow id, each listening call's queue and the loop it is read on.
        self._listening: dict[str, list[tuple[asyncio.AbstractEventLoop, NewsQueue]]] = {}

    def listen(self, workflow_id: str) -> NewsQueue:
        """Every piece of news of ``workflow_id``'s legs from now on; ``stop`` it when done."""
        queue = NewsQueue()
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
                loop.call_soon_threadsafe(queue.put_nowait, news)
