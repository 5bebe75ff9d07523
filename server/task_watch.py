"""Watching one task: the task as ``tasks/get`` shows it, again on every change.

A front end learns that a task changed without asking any worker and without
polling ``describe``: it long-polls the workflow's history
(``GetWorkflowExecutionHistory`` with ``wait_new_event``). Temporal holds that
request until an event is appended (a leg finished, an answer arrived, the
workflow completed a workflow task, the run closed) or its long-poll window
ends, so a watched task that does nothing costs one pending RPC on the
frontend and no reads, and any replica can watch a task any worker runs. Each
wake-up reads the task exactly as ``tasks/get`` does and yields it when a
client-visible field changed.

Progress messages live in the running leg's heartbeat, which is not history.
Watchers that want them (``progress=True``, the ``subscriptions/listen`` push)
also re-read a ``working`` task at its own adaptive ``pollIntervalMs``; a
parked or finished task is never re-read on a timer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.service import RPCError, RPCStatusCode

from fastmcp_temporal.server.engine import TaskEngine, workflow_id_for
from fastmcp_temporal.server.poll_interval import FLOOR_MS
from fastmcp_temporal.server.wire import TERMINAL_STATUSES, GetTaskResult

#: Upper bound of one long poll; the server answers earlier (empty) when its own window ends.
LONG_POLL_TIMEOUT = timedelta(seconds=70)
#: Fields that change between reads without the task changing.
_VOLATILE = {"poll_interval_ms"}


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
) -> AsyncIterator[GetTaskResult]:
    """Yield the task now, then each time it changes, ending with its terminal state.

    With ``seen`` (a view the caller already has), only changes after it are
    yielded. An unknown task, or another caller's, raises the same ``-32602``
    as ``tasks/get`` before anything is yielded.
    """
    current = seen
    if current is None:
        current = await engine.get(task_id, scope)
        yield current
    if is_terminal(current):
        return
    history = _HistoryTail(engine, workflow_id_for(task_id, scope))
    waiting: asyncio.Task[bool] | None = None
    try:
        while not is_terminal(current):
            if waiting is None:
                waiting = asyncio.ensure_future(history.next_change())
            timer = None  # only a running leg changes (its progress) outside the history
            if progress and current.status == "working":
                timer = (current.poll_interval_ms or FLOOR_MS) / 1000
            done, _ = await asyncio.wait({waiting}, timeout=timer)
            if waiting in done:
                if not waiting.result():
                    waiting = None
                    continue  # the long poll's window ended with nothing new
                waiting = None
            latest = await engine.get(task_id, scope)
            if _visible(latest) != _visible(current):
                yield latest
            current = latest
    finally:
        if waiting is not None:
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError, RPCError):
                await waiting


class _HistoryTail:
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

    async def next_change(self) -> bool:
        """Wait for new events; ``False`` when the long poll's window ended without any."""
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
            return False
        self._token = response.next_page_token
        return bool(response.history.events) or not self._token
