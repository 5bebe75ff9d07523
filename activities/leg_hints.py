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
A hint nobody listens for is kept (the latest ones of recent workflows), and
the next wait for that task takes it first: each hint reaches one wait's client
once, whenever the wait begins. A call listens as soon as its task's start (or
its answer's signal) returns; the same answer hands the worker the task's next
workflow task, and nothing orders the two, so under load the leg may speak
before the call listens (a CI run once delivered none of a leg's lines to its
call, where the leg ran).
Hints are delivered in the order they were made, each one, through
``call_soon_threadsafe``: the waiting call's loop need not be the leg's.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict, deque
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


@dataclass(frozen=True)
class LegStarted:
    """A leg of the task began in this process: its reports and lines come as hints."""


#: What a leg tells.
Hint = ProgressReport | LogLine | LegStarted
#: What a waiting call reads: each hint, in order (``None``: its own end, put by itself).
Hints = asyncio.Queue[Hint | None]
#: Workflows whose unheard hints are kept for the next wait (bounded).
_REMEMBERED_WORKFLOWS = 1024
#: Unheard hints kept per workflow (the latest).
_REMEMBERED_HINTS = 64

_lock = threading.Lock()
_unheard: OrderedDict[str, deque[Hint]] = OrderedDict()
#: Per workflow id, each waiting call's queue and the loop it is read on.
_listening: dict[str, list[tuple[asyncio.AbstractEventLoop, Hints]]] = {}


def started(workflow_id: str) -> None:
    """A leg of ``workflow_id``'s task began in this process."""
    _tell(workflow_id, LegStarted())


def reported(workflow_id: str, report: ProgressReport) -> None:
    """The leg of ``workflow_id``'s task reported progress in this process."""
    _tell(workflow_id, report)


def logged(workflow_id: str, line: LogLine) -> None:
    """The leg of ``workflow_id``'s task logged ``line`` in this process."""
    _tell(workflow_id, line)


def listen(workflow_id: str) -> Hints:
    """The hints of ``workflow_id``'s legs: those nobody heard yet, then each new one.

    Pass the queue to ``stop`` when the wait ends, whichever way.
    """
    queue: Hints = asyncio.Queue()
    with _lock:
        for hint in _unheard.pop(workflow_id, ()):
            queue.put_nowait(hint)
        _listening.setdefault(workflow_id, []).append((asyncio.get_running_loop(), queue))
    return queue


def stop(workflow_id: str, queue: Hints) -> None:
    with _lock:
        listeners = [entry for entry in _listening.get(workflow_id, []) if entry[1] is not queue]
        if listeners:
            _listening[workflow_id] = listeners
        else:
            _listening.pop(workflow_id, None)


def _tell(workflow_id: str, hint: Hint) -> None:
    with _lock:
        listeners = list(_listening.get(workflow_id, ()))
        if not listeners:
            kept = _unheard.get(workflow_id)
            if kept is None:
                kept = _unheard[workflow_id] = deque(maxlen=_REMEMBERED_HINTS)
                while len(_unheard) > _REMEMBERED_WORKFLOWS:
                    _unheard.popitem(last=False)
            kept.append(hint)
    for loop, queue in listeners:
        # A loop that has closed raises RuntimeError: nobody listens there any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(queue.put_nowait, hint)
