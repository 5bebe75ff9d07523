"""Watching one task: the task as ``tasks/get`` shows it, again on every change.

A front end learns that a task changed without asking any worker and without
polling ``describe``: it long-polls the workflow's history
(``GetWorkflowExecutionHistory`` with ``wait_new_event``). Temporal holds that
request until an event is appended (a leg finished, an answer arrived, the
workflow completed a workflow task, the run closed) or its long-poll window
ends, so a watched task that does nothing costs one pending RPC on the
frontend and no reads, and any replica can watch a task any worker runs.

A wake-up reads the task only when its new events can change what
``tasks/get`` shows. Those that cannot -- a workflow task scheduled, started
or completed without a memo change, a leg scheduled or finished (the next
state is what the workflow records after it), a search attribute, a marker, a
timer -- cost no read: under load most wakes are these, and every read is a
``describe`` competing with the completions it waits for. A run that
completed carries its final view in the completion event itself, so the last
state comes from the wake that announced it, with no read at all. Other wakes
read the task exactly as ``tasks/get`` does and yield it when a
client-visible field changed.

Progress messages live in the running leg's heartbeat, which is not history.
Watchers that want them (``progress=True``, the ``subscriptions/listen`` push)
also re-read a ``working`` task at its own adaptive ``pollIntervalMs``, but
not more often than once a second: a leg's message reaches Temporal at most
that often (the worker's heartbeat throttle, ``max_heartbeat_throttle_interval``:
1 s for the embedded worker, longer by default), so faster reads find nothing
new, and they were about a fifth of the CPU a listened-to 2 s task cost (10
at a time, clients, server and worker in one process: about 40 ms with reads
every 200 ms, 33 ms with none). A parked or finished task is never re-read
on a timer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, HistoryEventFilterType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.service import RPCError, RPCStatusCode

from fastmcp_temporal.server.core.codec import PayloadDecryptionError
from fastmcp_temporal.server.core.wire import TERMINAL_STATUSES, GetTaskResult
from fastmcp_temporal.server.tasks import poll_interval
from fastmcp_temporal.server.tasks.engine import TaskEngine, workflow_id_for
from fastmcp_temporal.timing import TICK_S
from fastmcp_temporal.workflows.models import TaskView

#: Upper bound of one long poll; the server answers earlier (empty) when its own window ends.
LONG_POLL_TIMEOUT = timedelta(seconds=70)
#: The shortest time between two progress reads of a running task (the heartbeat throttle).
PROGRESS_READ_FLOOR_MS = round(TICK_S * 1000)
#: Fields that change between reads without the task changing.
_VOLATILE = {"poll_interval_ms"}
#: Events after which ``tasks/get`` answers as before: the memo, the close and
#: a pending answer come with other events (properties modified, the close, a
#: signal); a failing workflow task or leg is not in this set.
_INVISIBLE = frozenset(
    {
        EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
        EventType.EVENT_TYPE_MARKER_RECORDED,
        EventType.EVENT_TYPE_TIMER_STARTED,
        EventType.EVENT_TYPE_TIMER_FIRED,
    }
)


_CONTINUED_AS_NEW = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW


def is_terminal(task: GetTaskResult) -> bool:
    return task.status in TERMINAL_STATUSES


def _visible(task: GetTaskResult) -> dict[str, Any]:
    return task.model_dump(exclude=_VOLATILE)


async def watch(
    engine: TaskEngine,
    task_id: str,
    scope: str | None,
    *,
    progress: bool = False,
    seen: GetTaskResult | None = None,
    started: bool = False,
) -> AsyncIterator[GetTaskResult]:
    """Yield the task now, then each time it changes, ending with its terminal state.

    With ``seen`` (a view the caller already has), only changes after it are
    yielded. An unknown task, or another caller's, raises the same ``-32602``
    as ``tasks/get`` before anything is yielded.

    ``started``: ``seen`` is the ``working`` view its start answered (or one
    read since), so the start event at the head of the history is no news: a
    first page of the start and other invisible events costs no read. Without
    it, that page costs a ``describe`` that finds the task as ``seen`` shows it.
    """
    current = seen
    if current is None:
        current = await engine.get(task_id, scope)
        yield current
    if is_terminal(current):
        return
    history = HistoryTail(engine, workflow_id_for(task_id, scope, engine.scope_secret))
    waiting: asyncio.Task[list[HistoryEvent] | None] | None = None
    known = _INVISIBLE | {EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED} if started else None
    try:
        while not is_terminal(current):
            if waiting is None:
                waiting = asyncio.ensure_future(history.next_change())
            timer = None  # only a running leg changes (its progress) outside the history
            if progress and current.status == "working":
                timer = max(current.poll_interval_ms or 0, PROGRESS_READ_FLOOR_MS) / 1000
            done, _ = await asyncio.wait({waiting}, timeout=timer)
            latest: GetTaskResult | None = None
            if waiting in done:
                events = waiting.result()
                waiting = None
                if events is None:
                    continue  # the window ended
                invisible, known = known or _INVISIBLE, None  # the start: first page only
                if not _may_show(events, invisible):
                    continue  # nothing a client sees changed
                latest = await _completed_view(engine, task_id, events)
            if latest is None:
                latest = await engine.get(task_id, scope)
            if _visible(latest) != _visible(current):
                yield latest
            current = latest
    finally:
        if waiting is not None:
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError, RPCError):
                await waiting


async def ended(
    engine: TaskEngine, task_id: str, scope: str | None, *, run_id: str | None = None
) -> GetTaskResult | None:
    """The task once its run closes, from one long poll for the close event alone.

    What ``result()`` reads: one history read, answered when the run closes (a
    ``watch`` reads the first page, then long-polls for each batch of events).
    It never sees a task park, so only a wait that learns of parks another way
    uses it. ``None`` when the run continued as new (the task goes on) or the
    poll's window ended with the run open. ``run_id``: the run to wait for, when
    known (the start's): the server then does not look up the current run.
    """
    request = GetWorkflowExecutionHistoryRequest(
        namespace=engine.client.namespace,
        execution=WorkflowExecution(
            workflow_id=workflow_id_for(task_id, scope, engine.scope_secret), run_id=run_id or ""
        ),
        wait_new_event=True,
        history_event_filter_type=HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
        skip_archival=True,
    )
    response = await engine.client.workflow_service.get_workflow_execution_history(
        request, retry=True, timeout=LONG_POLL_TIMEOUT
    )
    events = list(response.history.events)
    if not events or events[-1].event_type == _CONTINUED_AS_NEW:
        return None
    return await _completed_view(engine, task_id, events) or await engine.get(task_id, scope)


def _may_show(events: list[HistoryEvent], invisible: frozenset[int] = _INVISIBLE) -> bool:
    """Whether ``events`` (new at the history's end) can change what ``tasks/get`` shows.

    No events is a run that closed before this watch saw it: read.
    """
    return not events or any(event.event_type not in invisible for event in events)


async def _completed_view(
    engine: TaskEngine, task_id: str, events: list[HistoryEvent]
) -> GetTaskResult | None:
    """The final task from a completion event among ``events``; ``None`` if there is none.

    The workflow's result is the finished ``TaskView`` (what ``tasks/get``
    reads back from the memo or the result), so it is decoded where the wake
    found it. A payload this server cannot decrypt is left to ``tasks/get``.
    """
    if not events or events[-1].event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
        return None
    payloads = list(events[-1].workflow_execution_completed_event_attributes.result.payloads)
    try:
        (view,) = await engine.client.data_converter.decode(payloads[:1], [TaskView])
    except PayloadDecryptionError:
        return None
    finished = GetTaskResult.from_view(view)
    return poll_interval.adapt(engine.records.unless_expired(task_id, finished))


class HistoryTail:
    """Long polls on the end of a workflow's history, following continue-as-new.

    Every answer means "look again": the first ones hand back the events that
    were there before the watch (the reads they cause find nothing new), later
    ones come when something was appended. An empty page token means the run
    closed; the next poll follows the workflow id to its current run.
    """

    def __init__(self, engine: TaskEngine, workflow_id: str) -> None:
        self._client = engine.client
        self._workflow_id = workflow_id
        self._token = b""

    async def next_change(self) -> list[HistoryEvent] | None:
        """Wait for new events; ``None`` when the long poll's window ended without any.

        An empty list is a closed run with nothing new on this page.
        """
        request = GetWorkflowExecutionHistoryRequest(
            namespace=self._client.namespace,
            execution=WorkflowExecution(workflow_id=self._workflow_id),
            next_page_token=self._token,
            wait_new_event=True,
            skip_archival=True,
        )
        try:
            response = await self._client.workflow_service.get_workflow_execution_history(
                request, retry=True, timeout=LONG_POLL_TIMEOUT
            )
        except RPCError as err:
            if err.status != RPCStatusCode.DEADLINE_EXCEEDED:
                raise
            return None
        self._token = response.next_page_token
        events = list(response.history.events)
        return events if events or not self._token else None
