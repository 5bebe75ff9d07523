"""A parked task's answers that Temporal holds but the workflow has not applied yet.

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
set; when none is left the task is ``working`` again.

One window that tail cannot show: a signal that arrives while a worker runs a
workflow task of that workflow is *buffered* by Temporal -- durable, but held
out of the history until that workflow task ends (completed, failed or timed
out). Until then no read of any kind sees it, so ``tasks/update`` returns only
once its answer is in the history (``until_recorded``): the next read after
it, on any front end, shows the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
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


async def unapplied_answers(
    client: Client, description: TaskDescription
) -> list[tuple[datetime, InputDelivery]]:
    """The ``mcp_input`` signals the workflow has not applied yet, in history order."""
    info = description.raw.workflow_execution_info
    request = GetWorkflowExecutionHistoryReverseRequest(
        namespace=client.namespace,
        execution=WorkflowExecution(
            workflow_id=info.execution.workflow_id, run_id=info.execution.run_id
        ),
        maximum_page_size=_PAGE_SIZE,
    )
    signals: list[HistoryEvent] = []
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
                return await _decode(client, reversed(signals))
            if _is_answer(event):
                signals.append(event)
        if not response.next_page_token:
            return await _decode(client, reversed(signals))
        request.next_page_token = response.next_page_token


async def until_recorded(
    client: Client, description: TaskDescription, *, within: timedelta = RECORDED_WAIT
) -> None:
    """Return once an ``mcp_input`` signal newer than ``description`` is in the history.

    Called right after signalling: the signal is durable either way, this only
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
    if await _signalled_since(client, execution, info.history_length):
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within.total_seconds()):
            await _until_signalled(client, execution, info.history_length)


def _is_answer(event: HistoryEvent) -> bool:
    return (
        event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        and event.workflow_execution_signaled_event_attributes.signal_name == INPUT_SIGNAL
    )


async def _signalled_since(client: Client, execution: WorkflowExecution, since: int) -> bool:
    """Whether the history holds an answer after event ``since`` (newest events first)."""
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
            if _is_answer(event):
                return True
        if not response.next_page_token:
            return False
        request.next_page_token = response.next_page_token


async def _until_signalled(client: Client, execution: WorkflowExecution, since: int) -> None:
    """Follow the run's history (long polls at its end) until an answer after ``since`` is in it.

    The events end when the run closes.
    """
    handle = client.get_workflow_handle(execution.workflow_id, run_id=execution.run_id)
    async for event in handle.fetch_history_events(wait_new_event=True, skip_archival=True):
        if event.event_id > since and _is_answer(event):
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


def with_answers(view: TaskView, deliveries: list[tuple[datetime, InputDelivery]]) -> TaskView:
    """``view`` as the workflow will show it once it applied ``deliveries``."""
    if view.status != "input_required":
        return view
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
