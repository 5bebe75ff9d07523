"""A leg's progress, told in-process to a synchronous call waiting here: a hint, never state.

A durable synchronous call relays its body's ``report_progress`` to the client as
``notifications/progress``. Through Temporal, a report is a signal (a local leg)
or a heartbeat (an activity leg) that the waiting front end must read back from
the history or with a ``describe``. When the leg runs in the front end's own
process -- a short tool's local legs, which run where its workflow task runs,
which eager start puts here -- the leg tells the waiting call directly, and the
call waits on its task's close event alone (``server.protocol.sync_calls``).

Like ``workflows.park_hints``: no command, no history, lost with the process. The
newest report of a recent leg is remembered, so a wait that begins after the leg
reported still gets it. Reports are delivered in the order they were made, each
one (as an inline call sends them), through ``call_soon_threadsafe``: the
waiting call's loop need not be the leg's.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict

from fastmcp_temporal.workflows.models import ProgressReport

#: What a waiting call reads: each report, in order (``None``: its own end, put by itself).
Reports = asyncio.Queue[ProgressReport | None]
#: Workflows whose newest report is remembered for a wait that begins after it (bounded).
_REMEMBERED = 4096

_lock = threading.Lock()
_newest: OrderedDict[str, ProgressReport] = OrderedDict()
#: Per workflow id, each waiting call's queue and the loop it is read on.
_listening: dict[str, list[tuple[asyncio.AbstractEventLoop, Reports]]] = {}


def reported(workflow_id: str, report: ProgressReport) -> None:
    """The leg of ``workflow_id``'s task reported progress in this process."""
    with _lock:
        _newest[workflow_id] = report
        _newest.move_to_end(workflow_id)
        while len(_newest) > _REMEMBERED:
            _newest.popitem(last=False)
        listeners = list(_listening.get(workflow_id, ()))
    for loop, queue in listeners:
        # A loop that has closed raises RuntimeError: nobody listens there any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(queue.put_nowait, report)


def listen(workflow_id: str) -> Reports:
    """The reports of ``workflow_id``'s legs from now on, after its newest one so far.

    Pass the queue to ``stop`` when the wait ends, whichever way.
    """
    queue: Reports = asyncio.Queue()
    with _lock:
        if (newest := _newest.get(workflow_id)) is not None:
            queue.put_nowait(newest)
        _listening.setdefault(workflow_id, []).append((asyncio.get_running_loop(), queue))
    return queue


def stop(workflow_id: str, queue: Reports) -> None:
    with _lock:
        listeners = _listening.get(workflow_id, [])
        _listening[workflow_id] = [entry for entry in listeners if entry[1] is not queue]
        if not _listening[workflow_id]:
            del _listening[workflow_id]
