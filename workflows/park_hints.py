"""Which tasks parked in this process: a hint for a waiting synchronous call, never state.

A durable synchronous call waits for its task's end with one history read (the
close event, ``server.protocol.sync_calls``) when its task runs in the same
process's worker, which is what eager start gives a front end that hosts one.
Such a wait would miss a task that parks in ``input_required`` (the workflow
stays open), so the task's state machine tells this module when it parks, and
the wait then reads the history as ``tasks/get`` would.

The hint is a side channel, like ``task_metrics``: no command, no history, not
sent on replay, lost with the process. A hint that never comes (the task ran on
another worker) only makes the wait fall back after a bound; a stale one (a
task that parked once before) only makes it read at once. Workflow activations
run on the worker's threads, the waits on the event loop: hence the lock and
``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict

#: Parked workflow ids remembered for a wait that begins after the hint (bounded).
_REMEMBERED = 4096

_lock = threading.Lock()
_parked: OrderedDict[str, None] = OrderedDict()
_waiting: dict[str, list[asyncio.Future[None]]] = {}


def parked(workflow_id: str) -> None:
    """The task of ``workflow_id`` parked in this process (called by its state machine)."""
    with _lock:
        _parked[workflow_id] = None
        _parked.move_to_end(workflow_id)
        while len(_parked) > _REMEMBERED:
            _parked.popitem(last=False)
        waiting = _waiting.pop(workflow_id, [])
    for future in waiting:
        # A loop that has closed raises RuntimeError: nobody waits there any more.
        with contextlib.suppress(RuntimeError):
            future.get_loop().call_soon_threadsafe(_resolve, future)


def when_parked(workflow_id: str) -> asyncio.Future[None]:
    """A future done once the task of ``workflow_id`` parks here (at once if it already did).

    Pass it to ``forget`` when the wait ends, whichever way.
    """
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    with _lock:
        if workflow_id in _parked:
            future.set_result(None)
        else:
            _waiting.setdefault(workflow_id, []).append(future)
    return future


def forget(workflow_id: str, future: asyncio.Future[None]) -> None:
    with _lock:
        waiting = _waiting.get(workflow_id)
        if waiting is not None and future in waiting:
            waiting.remove(future)
            if not waiting:
                del _waiting[workflow_id]


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
