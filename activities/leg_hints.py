"""What a leg says while it runs, told in-process to a synchronous call waiting here: hints.

A durable synchronous call relays its body's ``report_progress`` and ``ctx.log``
to the client, as an inline call sends them (``notifications/progress``,
``notifications/message``). Through Temporal a report is a signal (a local leg)
or a heartbeat (an activity leg) that the waiting front end reads back from the
history or with a ``describe``, and a log line is not there at all. When the leg
runs in the front end's own process -- a short tool's local legs run where
their workflow task runs, which eager start puts here, and with a worker in the
front end activity legs mostly run here too -- the leg tells the waiting call
directly (``server.protocol.sync_progress.HintRelay``).

Like ``workflows.park_hints``: no command, no history, lost with the process.
The newest progress report of a recent leg is remembered, so a wait that begins
after the leg reported still gets it; a log line is heard only by a wait already
listening. A call listens as soon as its task's start returns, with no I/O in
between, while the first leg runs only once the worker has taken the start's
workflow task and scheduled it. Hints are delivered in the order they
were made, each one, through ``call_soon_threadsafe``: the waiting call's loop
need not be the leg's.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastmcp_temporal.workflows.models import ProgressReport


@dataclass(frozen=True)
class LogLine:
    """One ``ctx.log`` of a leg, as ``Context.log`` takes it."""

    message: str
    level: Any
    logger_name: str | None
    extra: Mapping[str, Any] | None


#: What a waiting call reads: each hint, in order (``None``: its own end, put by itself).
Hints = asyncio.Queue[ProgressReport | LogLine | None]
#: Workflows whose newest report is remembered for a wait that begins after it (bounded).
_REMEMBERED = 4096

_lock = threading.Lock()
_newest: OrderedDict[str, ProgressReport] = OrderedDict()
#: Per workflow id, each waiting call's queue and the loop it is read on.
_listening: dict[str, list[tuple[asyncio.AbstractEventLoop, Hints]]] = {}


def reported(workflow_id: str, report: ProgressReport) -> None:
    """The leg of ``workflow_id``'s task reported progress in this process."""
    with _lock:
        _newest[workflow_id] = report
        _newest.move_to_end(workflow_id)
        while len(_newest) > _REMEMBERED:
            _newest.popitem(last=False)
    _tell(workflow_id, report)


def logged(workflow_id: str, line: LogLine) -> None:
    """The leg of ``workflow_id``'s task logged ``line`` in this process."""
    _tell(workflow_id, line)


def listen(workflow_id: str) -> Hints:
    """The hints of ``workflow_id``'s legs from now on, after its newest report so far.

    Pass the queue to ``stop`` when the wait ends, whichever way.
    """
    queue: Hints = asyncio.Queue()
    with _lock:
        if (newest := _newest.get(workflow_id)) is not None:
            queue.put_nowait(newest)
        _listening.setdefault(workflow_id, []).append((asyncio.get_running_loop(), queue))
    return queue


def stop(workflow_id: str, queue: Hints) -> None:
    with _lock:
        listeners = [entry for entry in _listening.get(workflow_id, []) if entry[1] is not queue]
        if listeners:
            _listening[workflow_id] = listeners
        else:
            _listening.pop(workflow_id, None)


def _tell(workflow_id: str, hint: ProgressReport | LogLine) -> None:
    with _lock:
        listeners = list(_listening.get(workflow_id, ()))
    for loop, queue in listeners:
        # A loop that has closed raises RuntimeError: nobody listens there any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(queue.put_nowait, hint)
