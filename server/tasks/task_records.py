"""Reading a task from Temporal's records: closed tasks, memos, leg progress, expiry.

``TaskEngine.get`` answers an open task from its memo or its query; everything
else a ``tasks/get`` may need comes from here: how a closed workflow maps to a
finished task (completed → its result; failed → the view its failure carries;
cancelled, terminated and timed out → built from the memo and Temporal's close
time; a small finished view is in the memo already), what the running leg last
reported in its heartbeat or a workflow tool in its memo (read by ``leg_status``),
and when a finished task stops being readable.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from fastmcp.utilities.tasks import DEFAULT_POLL_INTERVAL
from mcp.shared.exceptions import MCPError
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import (
    DescribeWorkflowExecutionRequest,
    DescribeWorkflowExecutionResponse,
    GetWorkflowExecutionHistoryReverseRequest,
)
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from fastmcp_temporal.activities.input_capabilities import status_message, undeclared
from fastmcp_temporal.activities.stored_result import load_stored_result
from fastmcp_temporal.server.core.codec import UNDECRYPTABLE_ERROR_TYPE, PayloadDecryptionError
from fastmcp_temporal.server.core.temporal_errors import workflow_not_found
from fastmcp_temporal.server.core.wire import GetTaskResult, task_not_found
from fastmcp_temporal.server.tasks.leg_status import LegStatus, body_status, leg_status, utc
from fastmcp_temporal.workflows.models import (
    INPUT_CAPABILITIES_MEMO,
    TaskView,
)
from fastmcp_temporal.workflows.task_workflow import (
    FAILED_ERROR_TYPE,
    INTERNAL_ERROR,
    MEMO_KEY,
    TASK_EXPIRED,
)

#: How long a task that finished after its TTL stays readable.
FINISHED_GRACE = timedelta(minutes=1)
#: How far back a timed-out task's history is searched for why nobody ran it.
_RECENT_EVENTS = 10
#: What a client reads when its finished task's stored result cannot be read here.
UNREADABLE_RESULT = (
    "The task finished, but this server cannot read its stored result "
    "(a deployment problem; the server log says why)"
)
logger = logging.getLogger(__name__)
#: The task status a closed workflow's memo holds when it carries the final view.
_FINISHED_AS = {
    WorkflowExecutionStatus.COMPLETED: "completed",
    WorkflowExecutionStatus.FAILED: "failed",
}


@dataclass(frozen=True)
class TaskDescription:
    """The few fields of ``DescribeWorkflowExecution`` a task read uses.

    ``WorkflowHandle.describe()`` converts the whole response on every call
    (search attributes, every timestamp, typed wrappers); a ``tasks/get`` poll
    needs five fields, and it is the hottest read of the server, so they are
    taken from the protobuf directly.
    """

    raw: DescribeWorkflowExecutionResponse

    @property
    def status(self) -> WorkflowExecutionStatus:
        return WorkflowExecutionStatus(self.raw.workflow_execution_info.status)

    @property
    def has_pending_workflow_task(self) -> bool:
        """A change (signal, finished leg, start, cancel request) is not applied yet."""
        return self.raw.HasField("pending_workflow_task")

    @property
    def start_time(self) -> datetime:
        return utc(self.raw.workflow_execution_info.start_time)

    @property
    def close_time(self) -> datetime | None:
        info = self.raw.workflow_execution_info
        return utc(info.close_time) if info.HasField("close_time") else None


async def describe_raw(
    client: Client, workflow_id: str, run_id: str = "", timeout: timedelta | None = None
) -> DescribeWorkflowExecutionResponse | None:
    """One lean ``DescribeWorkflowExecution`` (no search-attribute decoding); ``None`` if absent."""
    request = DescribeWorkflowExecutionRequest(
        namespace=client.namespace,
        execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
    )
    try:
        return await client.workflow_service.describe_workflow_execution(
            request, retry=True, timeout=timeout
        )
    except RPCError as err:
        if workflow_not_found(err):
            return None
        raise


class TaskRecords:
    """What Temporal's records say about one task, in SEP-2663 terms."""

    def __init__(self, client: Client, *, ttl_ms: int, query_timeout: timedelta) -> None:
        self.client = client
        self.ttl_ms = ttl_ms
        self.query_timeout = query_timeout

    async def describe(self, task_id: str, workflow_id: str) -> TaskDescription:
        """One ``DescribeWorkflowExecution``; an unknown workflow is an unknown task."""
        _, description = await self.find(task_id, [workflow_id])
        return description

    async def find(self, task_id: str, workflow_ids: Sequence[str]) -> tuple[str, TaskDescription]:
        """The first of ``workflow_ids`` that exists, described; none is an unknown task."""
        for workflow_id in workflow_ids:
            raw = await describe_raw(self.client, workflow_id, timeout=self.query_timeout)
            if raw is not None:
                return workflow_id, TaskDescription(raw)
        raise task_not_found(task_id)

    async def closed_view(
        self,
        task_id: str,
        handle: WorkflowHandle[Any, TaskView],
        status: WorkflowExecutionStatus,
        description: TaskDescription | None = None,
        *,
        read_result: bool = True,
    ) -> GetTaskResult:
        """How a closed task ended; ``read_result=False`` skips reading a stored result
        (``tasks/update`` and ``tasks/cancel`` only need to know it has not expired)."""
        if description is None:
            description = await self.describe(task_id, handle.id)
        memo_view = await self.memo_view(task_id, description, closed=True)
        if memo_view.status == _FINISHED_AS.get(status):
            # A small finished view is in the memo (a big result by reference): no second read.
            view = await self._with_result(memo_view) if read_result else memo_view
            return self.unless_expired(task_id, GetTaskResult.from_view(view))
        if status == WorkflowExecutionStatus.COMPLETED:
            # Too big for the memo: a big result of a task that finished before
            # RESULT_STORED_ONCE is in the workflow's result.
            view = await self._with_result(await handle.result(rpc_timeout=self.query_timeout))
            return self.unless_expired(task_id, GetTaskResult.from_view(view))
        closed_at = description.close_time or datetime.now(UTC)
        if status == WorkflowExecutionStatus.CANCELED:
            view = memo_view.model_copy(
                update={"status": "cancelled", "last_updated_at": closed_at, "input_requests": None}
            )
        elif status == WorkflowExecutionStatus.FAILED:
            view = await self._failed_view(handle, memo_view, closed_at)
        else:
            error = {"code": INTERNAL_ERROR, "message": "Task ended by the operator"}
            message = f"Task ended by the operator ({status.name.lower()})"
            if status == WorkflowExecutionStatus.TIMED_OUT:  # still running at its TTL
                message = "Task expired: still running at the end of its TTL"
                unreadable = await self._unreadable_reason(handle.id)
                if unreadable is not None:
                    message = f"Task expired: no worker could read it within its TTL. {unreadable}"
                error = {"code": TASK_EXPIRED, "message": message}
            view = memo_view.model_copy(
                update={
                    "status": "failed",
                    "last_updated_at": closed_at,
                    "status_message": message,
                    "error": error,
                    "input_requests": None,
                }
            )
        return self.unless_expired(task_id, GetTaskResult.from_view(view))

    async def _with_result(self, view: TaskView) -> TaskView:
        """``view`` with its stored result read in; the expiry is checked first, so an
        expired task costs no read."""
        if view.stored_result is None:
            return view
        self.unless_expired(view.task_id, GetTaskResult.from_view(view))
        try:
            result = await load_stored_result(self.client.data_converter, view.stored_result)
        except Exception:
            # A store this process does not share, a missing key, a purged blob:
            # the deployment's problem, and its details (paths, buckets, key ids)
            # are for the operator's log, not for the client.
            logger.exception("Cannot read the stored result of task %s", view.task_id)
            raise MCPError(code=INTERNAL_ERROR, message=UNREADABLE_RESULT) from None
        return view.model_copy(update={"result": result, "stored_result": None})

    async def _unreadable_reason(self, workflow_id: str) -> str | None:
        """Why no worker could run a workflow that timed out, if no worker could decrypt it.

        Such a workflow never got past its workflow tasks: each worker that
        took one failed it (``PayloadDecryptionError`` is retryable), and
        Temporal records the first failure, in clear (it names key ids only),
        a few events before the end.
        """
        request = GetWorkflowExecutionHistoryReverseRequest(
            namespace=self.client.namespace,
            execution=WorkflowExecution(workflow_id=workflow_id),
            maximum_page_size=_RECENT_EVENTS,
        )
        response = await self.client.workflow_service.get_workflow_execution_history_reverse(
            request, retry=True, timeout=self.query_timeout
        )
        for event in response.history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                failure = event.workflow_task_failed_event_attributes.failure
                if failure.application_failure_info.type == UNDECRYPTABLE_ERROR_TYPE:
                    return failure.message
                return None
        return None

    async def _failed_view(
        self, handle: WorkflowHandle[Any, TaskView], memo_view: TaskView, closed_at: datetime
    ) -> TaskView:
        message = "Task failed"
        try:
            await handle.result(rpc_timeout=self.query_timeout)
        except WorkflowFailureError as failure:
            cause = failure.cause
            if (
                isinstance(cause, ApplicationError)
                and cause.type == FAILED_ERROR_TYPE
                and cause.details
            ):
                return TaskView.model_validate(cause.details[0])
            if isinstance(cause, ApplicationError) and cause.type == UNDECRYPTABLE_ERROR_TYPE:
                message = cause.message  # a worker failed it closed; the reason names key ids
        except PayloadDecryptionError as err:
            message = f"Task failed; this server cannot read why. {err.message}"
        return memo_view.model_copy(
            update={
                "status": "failed",
                "last_updated_at": closed_at,
                "status_message": message,
                "error": {"code": INTERNAL_ERROR, "message": message},
                "input_requests": None,
            }
        )

    async def memo_view(
        self, task_id: str, description: TaskDescription, *, closed: bool = False
    ) -> TaskView:
        fields = description.raw.workflow_execution_info.memo.fields
        if MEMO_KEY not in fields:  # a workflow with a task's id that no task started
            raise task_not_found(task_id)
        payload = fields[MEMO_KEY]
        try:
            (memo,) = await self.client.data_converter.decode([payload], [dict])
        except PayloadDecryptionError:
            if not closed:
                raise
            # Encrypted under a key this server lacks: a closed task still reports
            # how it ended, on Temporal's own timestamps.
            return TaskView(
                task_id=task_id,
                status="working",
                created_at=description.start_time,
                last_updated_at=description.start_time,
                ttl_ms=self.ttl_ms,
                poll_interval_ms=int(DEFAULT_POLL_INTERVAL.total_seconds() * 1000),
            )
        return TaskView.model_validate(memo)

    async def undeclared_input_message(
        self, view: TaskView, description: TaskDescription
    ) -> str | None:
        """A parked task's ``statusMessage`` if its creating client cannot answer it."""
        fields = description.raw.workflow_execution_info.memo.fields
        if view.status != "input_required" or INPUT_CAPABILITIES_MEMO not in fields:
            return None  # a task created before the memo existed parks without one
        try:
            (declared,) = await self.client.data_converter.decode(
                [fields[INPUT_CAPABILITIES_MEMO]], [dict]
            )
        except PayloadDecryptionError:
            return None
        missing = undeclared(view.input_requests or {}, declared)
        return status_message(missing) if missing else None

    async def progress(
        self, description: TaskDescription, body: DescribeWorkflowExecutionResponse | None = None
    ) -> LegStatus | None:
        """The latest progress message of what runs the task's body, if it reported one.

        A leg's is in its heartbeat details; a workflow tool's is in the memo of
        its workflow (the task's pending child): ``body``, that child described
        (``stuck_bodies`` did), or one more ``describe`` away.
        """
        if description.raw.pending_activities:
            return await leg_status(self.client, description.raw.pending_activities[0])
        if body is None and description.raw.pending_children:
            child = description.raw.pending_children[0]
            body = await describe_raw(
                self.client, child.workflow_id, child.run_id, timeout=self.query_timeout
            )
        if body is None:
            return None  # no body, or it ended between the two reads
        return await body_status(self.client, body)

    async def body_progress(self, workflow_id: str, run_id: str = "") -> LegStatus | None:
        """What a workflow tool's workflow last reported, from its memo (open or closed)."""
        raw = await describe_raw(self.client, workflow_id, run_id, timeout=self.query_timeout)
        if raw is None:
            return None  # it ended between the two reads, or never started
        return await body_status(self.client, raw)

    def unless_expired(self, task_id: str, result: GetTaskResult) -> GetTaskResult:
        """A finished task past its TTL no longer exists for clients.

        It expires at ``createdAt + ttlMs``, or -- when it finished later than
        that (a long run, or a parked task that its TTL ended) -- one
        ``FINISHED_GRACE`` after it finished, so a polling client still sees
        how it ended.
        """
        if result.ttl_ms is None:
            return result
        created = datetime.fromisoformat(result.created_at.replace("Z", "+00:00"))
        finished = datetime.fromisoformat(result.last_updated_at.replace("Z", "+00:00"))
        expires = max(created + timedelta(milliseconds=result.ttl_ms), finished + FINISHED_GRACE)
        if datetime.now(UTC) > expires:
            raise task_not_found(task_id)
        return result
