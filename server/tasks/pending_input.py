"""A parked task's answers (and cancellation) that Temporal holds but the workflow has not applied.

``tasks/update`` is a signal: durable in the workflow's history when the RPC
returns, applied when a worker next runs the workflow. Until then the memo
still lists the answered keys as outstanding. Asking the workflow (a query)
would show the answer, but only with a worker up; with none, the query waits
its whole timeout and the poll still shows the stale keys.

So the read path asks Temporal's records instead: the events after the
workflow's last completed workflow task are exactly the changes it has not
applied, and the ``mcp_input`` signals among them are acknowledged answers.
Reading them is one short ``GetWorkflowExecutionHistoryReverse`` (newest
events first, stopping at that boundary), with or without a worker, and no
worker is disturbed. Applying them to the memo's view follows the workflow's
own signal handler (``deliver_input``): answered keys leave the outstanding
set; when none is left the task is ``working`` again. ``tasks/cancel`` of a
parked task is read the same way: a cancellation request among those events
makes it ``cancelled`` -- the workflow ends so when it applies it, whatever
answer came with it, since nothing but the wait for answers runs then -- so a
later answer finds no outstanding key and resumes nothing.

One window that tail cannot show: a signal that arrives while a worker runs a
workflow task of that workflow is *buffered* by Temporal -- durable, but held
out of the history until that workflow task ends (completed, failed or timed
out). Until then no read of any kind sees it, so ``tasks/update`` (and
``tasks/cancel`` of a parked task) returns only once its signal (its request)
is in the history (``until_recorded``): the next read after it, on any front
end, shows it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import Client

from fastmcp_temporal.server.core.codec import PayloadDecryptionError
from fastmcp_temporal.server.tasks.task_records import TaskDescription
from fastmcp_temporal.workflows.models import INPUT_SIGNAL, InputDelivery, TaskView

#: Events per page; the unapplied tail of a parked task is a handful of events.
_PAGE_SIZE = 16
#: How long ``tasks/update`` waits for a buffered answer to reach the history:
#: Temporal's default workflow task timeout, after which it flushes the buffer
#: even when the worker running that workflow task died. A parked task's
#: workflow tasks only apply answers, so in practice the wait is milliseconds.
RECORDED_WAIT = timedelta(seconds=10)


class StaleDescription(Exception):
    """The history moved past the ``describe`` it is compared with; describe again."""


@dataclass(frozen=True)
class Unapplied:
    """What the workflow has not applied yet: answers in history order, and a cancellation."""

    answers: list[tuple[datetime, InputDelivery]]
    cancel_requested_at: datetime | None = None


async def unapplied(client: Client, description: TaskDescription) -> Unapplied:
    """The ``mcp_input`` signals and the cancellation request the workflow has not applied."""
    info = description.raw.workflow_execution_info
    request = GetWorkflowExecutionHistoryReverseRequest(
        namespace=client.namespace,
        execution=WorkflowExecution(
            workflow_id=info.execution.workflow_id, run_id=info.execution.run_id
        ),
        maximum_page_size=_PAGE_SIZE,
    )
    signals: list[HistoryEvent] = []
    cancel_requested_at: datetime | None = None
    first_page = True
    while True:
        response = await client.workflow_service.get_workflow_execution_history_reverse(
            request, retry=True
        )
        events = list(response.history.events)
        if first_page and events and events[0].event_id > info.history_length:
            # A workflow task completed after the describe: its memo is stale.
            raise StaleDescription()
        first_page = False
        for event in events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                return Unapplied(await _decode(client, reversed(signals)), cancel_requested_at)
            if _is_answer(event):
                signals.append(event)
            elif _is_cancel_request(event):
                cancel_requested_at = event.event_time.ToDatetime(tzinfo=UTC)
        if not response.next_page_token:
            return Unapplied(await _decode(client, reversed(signals)), cancel_requested_at)
        request.next_page_token = response.next_page_token


async def until_recorded(
    client: Client,
    description: TaskDescription,
    *,
    cancel: bool = False,
    within: timedelta = RECORDED_WAIT,
) -> None:
    """Return once an ``mcp_input`` signal (``cancel``: a cancellation request) newer
    than ``description`` is in the history.

    Called right after signalling (cancelling): it is durable either way, this only
    makes it readable. One reverse read when it is there already (the common
    case); a buffered one is waited for with a long poll on the history, which
    Temporal answers when the workflow task holding it back ends. Past
    ``within``, or when the run closes, it returns anyway: the answer is safe,
    a read just shows it a little later.
    """
    info = description.raw.workflow_execution_info
    execution = WorkflowExecution(
        workflow_id=info.execution.workflow_id, run_id=info.execution.run_id
    )
    wanted = _is_cancel_request if cancel else _is_answer
    if await _recorded_since(client, execution, info.history_length, wanted):
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within.total_seconds()):
            await _until_recorded(client, execution, info.history_length, wanted)


def _is_answer(event: HistoryEvent) -> bool:
    return (
        event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        and event.workflow_execution_signaled_event_attributes.signal_name == INPUT_SIGNAL
    )


def _is_cancel_request(event: HistoryEvent) -> bool:
    return event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED


async def _recorded_since(
    client: Client,
    execution: WorkflowExecution,
    since: int,
    wanted: Callable[[HistoryEvent], bool],
) -> bool:
    """Whether the history holds a ``wanted`` event after event ``since`` (newest first)."""
    request = GetWorkflowExecutionHistoryReverseRequest(
        namespace=client.namespace, execution=execution, maximum_page_size=_PAGE_SIZE
    )
    while True:
        response = await client.workflow_service.get_workflow_execution_history_reverse(
            request, retry=True
        )
        for event in response.history.events:
            if event.event_id <= since:
                return False
            if wanted(event):
                return True
        if not response.next_page_token:
            return False
        request.next_page_token = response.next_page_token


async def _until_recorded(
    client: Client,
    execution: WorkflowExecution,
    since: int,
    wanted: Callable[[HistoryEvent], bool],
) -> None:
    """Follow the run's history (long polls at its end) until a ``wanted`` event after
    ``since`` is in it. The events end when the run closes."""
    handle = client.get_workflow_handle(execution.workflow_id, run_id=execution.run_id)
    async for event in handle.fetch_history_events(wait_new_event=True, skip_archival=True):
        if event.event_id > since and wanted(event):
            return


async def _decode(
    client: Client, signals: Iterable[HistoryEvent]
) -> list[tuple[datetime, InputDelivery]]:
    deliveries: list[tuple[datetime, InputDelivery]] = []
    for event in signals:
        payloads = list(event.workflow_execution_signaled_event_attributes.input.payloads)
        try:
            (delivery,) = await client.data_converter.decode(payloads, [InputDelivery])
        except PayloadDecryptionError:
            continue  # encrypted under a key this server lacks: the memo stays the answer
        deliveries.append((event.event_time.ToDatetime(tzinfo=UTC), delivery))
    return deliveries


def with_unapplied(view: TaskView, changes: Unapplied) -> TaskView:
    """``view`` as the workflow will show it once it applied ``changes``."""
    if view.status != "input_required":
        return view
    if changes.cancel_requested_at is not None:
        return view.model_copy(
            update={
                "status": "cancelled",
                "status_message": None,
                "input_requests": None,
                "last_updated_at": changes.cancel_requested_at,
            }
        )
    deliveries = changes.answers
    outstanding = dict(view.input_requests or {})
    last_updated_at = view.last_updated_at
    for received_at, delivery in deliveries:
        answered = [key for key in delivery.responses if key in outstanding]
        for key in answered:
            del outstanding[key]
        if answered:
            last_updated_at = received_at
    if outstanding == (view.input_requests or {}):
        return view
    if outstanding:
        return view.model_copy(
            update={"input_requests": outstanding, "last_updated_at": last_updated_at}
        )
    return view.model_copy(
        update={
            "status": "working",
            "status_message": None,
            "input_requests": None,
            "last_updated_at": last_updated_at,
        }
    )
