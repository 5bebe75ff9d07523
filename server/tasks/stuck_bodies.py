"""Whether a task's body keeps failing: what fails, and how often.

Temporal retries a body's failures silently, and for a long time: a workflow
task whose code raises (a sync LangGraph router, a non-deterministic change)
is retried until the task's TTL; so is an activity no worker of its queue
registered, or a leg whose workers cannot decrypt it; and work on a task queue
that no worker polls waits as long. Nothing of it is in the task's memo, so
``tasks/get`` would say "working" all along. Here the task's ``describe`` (the
one ``tasks/get`` makes anyway) is read for it, and so are those of the
workflows the task owns below it: a workflow tool's body workflow and its
children, at any depth (``_MAX_DESCRIBES`` at most, the body's own being the
one its progress read needs anyway). What a ``describe`` says:

- its workflow task at attempt 2 or more: it failed (or timed out) and fails
  again; why is in the history, ten events from its end (read only then);
- an activity at attempt 2 or more, waiting for its next attempt (or in it
  for less than ``UNSTARTED_S``), with the last attempt's failure;
- a workflow task or activity scheduled ``UNSTARTED_S`` ago and not started:
  then the queue's pollers are read (``DescribeTaskQueue``); none listed is a
  queue nobody serves (a worker that is lost stays listed for a few minutes:
  Temporal's poller history; one whose slots are all busy polls no more for a
  while, so how long ago a worker polled says nothing).

The deeper reads (a failure's history, a queue's pollers) happen only when the
``describe`` shows such trouble, and each is remembered in this process for
``REMEMBER_S``: however often a stuck task is polled, each costs Temporal at
most one read that long. A ``Stuck`` becomes the task's ``statusMessage``, and
a waiting plain call that sees one for ``stuck_call_timeout_s`` ends
(``call_waits``); the task itself keeps retrying, so a fix and a deploy finish it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import (
    EventType,
    PendingActivityState,
    PendingWorkflowTaskState,
    TaskQueueKind,
    TaskQueueType,
)
from temporalio.api.failure.v1 import Failure
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.api.workflowservice.v1 import (
    DescribeTaskQueueRequest,
    DescribeWorkflowExecutionResponse,
    GetWorkflowExecutionHistoryReverseRequest,
)
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from fastmcp_temporal.activities.tool_leg import is_task_workflow
from fastmcp_temporal.server.core.codec import PayloadDecryptionError
from fastmcp_temporal.server.core.temporal_errors import workflow_not_found
from fastmcp_temporal.server.tasks.task_records import describe_raw
from fastmcp_temporal.workflows.leg_retry import failure_reason

#: How long scheduled work may wait for a worker before the queue's pollers are read.
UNSTARTED_S = 3.0
#: How long a deeper read (a failure's history, a queue's pollers) is remembered here.
REMEMBER_S = 5.0
#: The most ``describe`` calls below the task's own in one read.
_MAX_DESCRIBES = 4
#: How far back a failing workflow task's history is read for its first failure.
_RECENT_EVENTS = 10
#: The longest reason quoted (its first line).
_REASON_CHARS = 300
_FAILED_EVENTS = {
    EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
}


@dataclass(frozen=True)
class Stuck:
    """What keeps failing in a task's body, in one line (the ``statusMessage``).

    ``settled``: ``False`` for an attempt that failed before and started again moments
    ago (``UNSTARTED_S``): most such attempts fail within milliseconds, so it does not
    end a stuck spell, but it may be a worker's recovery too, so it is not said over
    what the attempt reports."""

    message: str
    settled: bool = True


@dataclass(frozen=True)
class BodyHealth:
    """One look below a task: ``stuck`` if something keeps failing; ``body``: the task's
    body workflow as described on the way (a workflow tool's progress is in its memo)."""

    stuck: Stuck | None
    body: DescribeWorkflowExecutionResponse | None


class _Remembered:
    """A few deeper reads, each kept ``REMEMBER_S`` (bounded: the oldest go first)."""

    def __init__(self, limit: int = 512) -> None:
        self._limit = limit
        self._values: dict[tuple[str, ...], tuple[float, str | None]] = {}

    def get(self, key: tuple[str, ...]) -> tuple[bool, str | None]:
        found = self._values.get(key)
        if found is None or time.monotonic() - found[0] > REMEMBER_S:
            return False, None
        return True, found[1]

    def put(self, key: tuple[str, ...], value: str | None) -> None:
        if len(self._values) >= self._limit:
            del self._values[next(iter(self._values))]
        self._values[key] = (time.monotonic(), value)


class StuckBodies:
    """Reads whether the bodies of tasks keep failing (see the module docstring)."""

    def __init__(self, client: Client, *, query_timeout: timedelta) -> None:
        self.client = client
        self.query_timeout = query_timeout
        self._remembered = _Remembered()

    async def health(self, task: DescribeWorkflowExecutionResponse) -> BodyHealth:
        """Whether anything the task owns keeps failing, and its body workflow, described."""
        budget = [_MAX_DESCRIBES]
        body: DescribeWorkflowExecutionResponse | None = None
        stuck = await self._own_trouble(task)
        for child in list(task.pending_children)[:1]:  # a task runs one body at a time
            described = await self._describe(child.workflow_id, child.run_id, budget)
            if described is None:
                continue
            body = described
            stuck = stuck or await self._below(described, budget)
        return BodyHealth(stuck, body)

    async def _below(
        self, workflow: DescribeWorkflowExecutionResponse, budget: list[int]
    ) -> Stuck | None:
        if stuck := await self._own_trouble(workflow):
            return stuck
        for child in workflow.pending_children:
            described = await self._describe(child.workflow_id, child.run_id, budget)
            if described is not None and (stuck := await self._below(described, budget)):
                return stuck
        return None

    async def _own_trouble(self, workflow: DescribeWorkflowExecutionResponse) -> Stuck | None:
        """Trouble in this workflow's own workflow task or activities."""
        workflow_type = workflow.workflow_execution_info.type.name
        ours = is_task_workflow(workflow_type)
        name = "the task's workflow" if ours else f"workflow {workflow_type}"
        queue = workflow.execution_config.task_queue.name
        if workflow.HasField("pending_workflow_task"):
            pending = workflow.pending_workflow_task
            if pending.attempt > 1:
                reason = await self._workflow_task_failure(workflow)
                attempt = pending.attempt
                return _stuck(f"{name} fails its workflow task (attempt {attempt}): {reason}")
            if pending.state == PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED:
                waited = _waited(pending.scheduled_time)
                if waited >= UNSTARTED_S and not await self._polled(queue, workflow=True):
                    return _stuck(
                        f"no worker polls task queue {queue!r} for the workflow tasks of {name} "
                        f"(waiting {waited:.0f} s)"
                    )
        for activity in workflow.pending_activities:
            activity_type = activity.activity_type.name
            what = f"activity {activity_type!r} of {name}"
            if ours:
                what = f"tool leg {activity_type!r}"
            if stuck := await self._activity_trouble(activity, what, queue):
                return stuck
        return None

    async def _activity_trouble(
        self, activity: PendingActivityInfo, what: str, workflow_queue: str
    ) -> Stuck | None:
        failed_before = activity.attempt > 1 and activity.HasField("last_failure")
        if activity.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED:
            if not failed_before or _waited(activity.last_started_time) >= UNSTARTED_S:
                return None  # an attempt that runs is not stuck
            reason = await self._reason(activity.last_failure)
            return _stuck(f"{what} fails (attempt {activity.attempt}): {reason}", settled=False)
        if activity.state != PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED:
            return None  # being cancelled, paused
        if failed_before:
            reason = await self._reason(activity.last_failure)
            return _stuck(f"{what} fails (attempt {activity.attempt}): {reason}")
        queue = activity.activity_options.task_queue.name or workflow_queue
        waited = _waited(activity.scheduled_time)
        if waited >= UNSTARTED_S and not await self._polled(queue, workflow=False):
            return _stuck(
                f"no worker polls task queue {queue!r} for {what} (waiting {waited:.0f} s)"
            )
        return None

    async def _describe(
        self, workflow_id: str, run_id: str, budget: list[int]
    ) -> DescribeWorkflowExecutionResponse | None:
        if budget[0] <= 0:
            return None
        budget[0] -= 1
        return await describe_raw(self.client, workflow_id, run_id, timeout=self.query_timeout)

    async def _workflow_task_failure(self, workflow: DescribeWorkflowExecutionResponse) -> str:
        """Why the workflow task fails: Temporal records its first failure, then only counts."""
        execution = workflow.workflow_execution_info.execution
        since = workflow.pending_workflow_task.original_scheduled_time.ToJsonString()
        key = ("workflow-task", execution.workflow_id, execution.run_id, since)
        known, reason = self._remembered.get(key)
        if not known:
            reason = await self._read_workflow_task_failure(execution)
            self._remembered.put(key, reason)
        return reason or "see the workers' logs"

    async def _read_workflow_task_failure(self, execution: WorkflowExecution) -> str | None:
        request = GetWorkflowExecutionHistoryReverseRequest(
            namespace=self.client.namespace,
            execution=WorkflowExecution(workflow_id=execution.workflow_id, run_id=execution.run_id),
            maximum_page_size=_RECENT_EVENTS,
        )
        try:
            response = await self.client.workflow_service.get_workflow_execution_history_reverse(
                request, retry=True, timeout=self.query_timeout
            )
        except RPCError as err:
            if workflow_not_found(err):
                return None
            raise
        for event in response.history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
                return "its workflow task timed out (a worker lost or too busy to answer)"
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                return await self._reason(event.workflow_task_failed_event_attributes.failure)
        return None

    async def _reason(self, failure: Failure) -> str:
        """A failure's type and the first line of its message (decoded: it may be encrypted)."""
        failure = _copied(failure)  # decoding works in place; the description is read on
        try:
            error = await self.client.data_converter.decode_failure(failure)
        except PayloadDecryptionError as err:
            return _first_line(err.message)
        kind = error.type if isinstance(error, ApplicationError) else None
        if kind and not failure.message and not failure.HasField("encoded_attributes"):
            return kind  # raised without a message (the SDK would say "Application error")
        reason = failure_reason(error)
        if kind and not reason.startswith(kind):
            reason = f"{kind}: {reason}"
        return _first_line(reason)

    async def _polled(self, queue: str, *, workflow: bool) -> bool:
        """Whether a worker polled ``queue`` (for workflow or activity tasks) lately."""
        kind = "workflow" if workflow else "activity"
        key = ("pollers", kind, queue)
        known, polled = self._remembered.get(key)
        if known:
            return polled is not None
        request = DescribeTaskQueueRequest(
            namespace=self.client.namespace,
            task_queue=TaskQueue(name=queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
            task_queue_type=(
                TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW
                if workflow
                else TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY
            ),
        )
        response = await self.client.workflow_service.describe_task_queue(
            request, retry=True, timeout=self.query_timeout
        )
        # Any poller Temporal still lists: a worker whose slots are all busy polls no more
        # until one frees, so an old poll is not a missing worker. A lost worker stays
        # listed for minutes (Temporal's poller history); a queue none ever polled, none.
        seen = len(response.pollers) > 0
        self._remembered.put(key, "yes" if seen else None)
        return seen


def _stuck(message: str, *, settled: bool = True) -> Stuck:
    return Stuck(message[:1].upper() + message[1:], settled)


def _waited(timestamp: Timestamp) -> float:
    """Seconds since ``timestamp`` (0 if it is unset)."""
    if not timestamp.seconds:
        return 0.0
    return (datetime.now(UTC) - timestamp.ToDatetime(tzinfo=UTC)).total_seconds()


def _copied(failure: Failure) -> Failure:
    copy = Failure()
    copy.CopyFrom(failure)
    return copy


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else text
    return line if len(line) <= _REASON_CHARS else line[: _REASON_CHARS - 1] + "…"
