"""One MCP task = one Temporal workflow.

The workflow is the task's state machine and nothing else: it runs the tool body
as activities (one per leg), parks on client input, and answers ``tasks/get``
from memory through a query. It never touches the network, reads the clock only
through ``workflow.now()`` and mints input keys deterministically, so every
replay rebuilds exactly the same state.

Why signals for input: a signal is durable the moment the ``tasks/update`` RPC
returns, even with no worker running, and concurrent signals are applied in
history order. Two racing answers therefore cannot both start the next leg --
the first completes the round, the second finds nothing outstanding -- with no
lock anywhere.

What an operator sees in the Web UI is kept here too, written only on state
changes: the ``McpTaskStatus`` search attribute (when the namespace has it) and
the *current details* (what the task waits for, or which leg runs).

Why the two task workflows run outside Temporal's workflow sandbox
(``sandboxed=False``): the sandbox guards *unknown* workflow code against
non-determinism (the clock, randomness, I/O, module state shared between
runs) by re-entering a restricted importer on every activation, which cost
about 10 ms of CPU per durable synchronous call, a third of what such a call
spends (``bench/results/durable_sync.md``). This code is ours and kept
deterministic by review and by the replay gate (``tests/test_replay.py``): it
reads time only through ``workflow.now()``, mints ids from the round number,
does no I/O, imports only at module level, and keeps no mutable state outside
its instance. Running unsandboxed changes no command and no history, so every
recorded history replays as before. Users' workflow tools (the child the task
runs, ``body_workflow``) keep their own ``@workflow.defn``, sandboxed by default.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, NoReturn

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    FailureError,
    is_cancelled_exception,
)
from temporalio.exceptions import TimeoutError as LegTimeoutError

from fastmcp_temporal.workflows.body_workflow import WorkflowBodyRunner
from fastmcp_temporal.workflows.leg_retry import (
    deadline_passed,
    ended_while_cancelling,
    expired_message,
    failure_reason,
    leg_retry,
)
from fastmcp_temporal.workflows.local_legs import LocalLegRunner, runs_locally
from fastmcp_temporal.workflows.models import (
    INPUT_SIGNAL,
    TASK_STATUS_ATTRIBUTE,
    VIEW_QUERY,
    WORKFLOW_TYPE,
    WORKFLOW_TYPE_PREFIX,
    BodyOutcome,
    InputDelivery,
    LegOutcome,
    LegRequest,
    ProgressReport,
    ResumePoint,
    StoredResult,
    TaskStart,
    TaskStatus,
    TaskView,
)
from fastmcp_temporal.workflows.patches import (
    LEG_CANCEL_WINS_PATCH,
    LOCAL_LEG_PROGRESS,
    RESULT_STORED_ONCE,
    patched,
)
from fastmcp_temporal.workflows.task_metrics import TransitionMetrics

#: Memo key holding the task's last state change, so ``tasks/get`` can answer
#: from Temporal's own records when no worker is up to serve the query.
MEMO_KEY = "mcp"
#: JSON-RPC ``-32603``: how a task that broke outside its tool body fails.
INTERNAL_ERROR = -32603
#: Implementation-defined server error: the task's TTL ran out while it waited.
TASK_EXPIRED = -32000
FAILED_ERROR_TYPE = "McpTaskFailed"
#: JSON-RPC ``-32602``: the task's own input cannot be carried by Temporal.
INVALID_PARAMS = -32602
_DETAILS_LIMIT = 500
#: A finished task whose view (result included) is at most this big is also
#: written to the memo, so ``tasks/get`` reads it with one ``describe``; a
#: bigger one is read from the workflow's result rather than stored twice. (A
#: result past the payload store's threshold is a ``StoredResult`` reference
#: since ``RESULT_STORED_ONCE``: its view fits.)
FINAL_MEMO_LIMIT = 16 * 1024


class _TaskMachine(WorkflowBodyRunner, LocalLegRunner):
    """The task's state machine; the two workflow definitions below only feed it."""

    def _setup(self, start: TaskStart) -> None:
        self._start = start
        self._status: TaskStatus = "working"
        self._status_message: str | None = None
        self._last_updated_at = start.resume.last_updated_at if start.resume else start.created_at
        self._result: dict[str, Any] | None = None
        self._stored_result: StoredResult | None = None
        self._final_progress: ProgressReport | None = None
        self._error: dict[str, Any] | None = None
        # Outstanding input: minted key -> (tool's own key, the request).
        self._outstanding: dict[str, tuple[str, dict[str, Any]]] = {}
        self._answers: dict[str, dict[str, Any]] = {}
        self._metrics = TransitionMetrics(start.tool_name)
        self._setup_local_legs()

    async def _execute(self, start: TaskStart) -> TaskView:
        try:
            if start.body is not None:
                return await self._run_workflow_tool(start)
            return await self._run_rounds(start)
        except asyncio.CancelledError:
            self._transition("cancelled")
            raise

    async def _run_rounds(self, start: TaskStart) -> TaskView:
        resume = start.resume
        first_round = resume.round if resume else 1
        responses = resume.input_responses if resume else start.input_responses
        request_state = resume.request_state if resume else start.request_state
        for round_number in range(first_round, start.max_rounds + 1):
            if round_number > first_round and self._history_is_long(round_number - first_round):
                # Keep long multi-step tasks within the history limits: a new
                # run carries the next round's inputs, nothing else is needed.
                workflow.continue_as_new(
                    start.model_copy(
                        update={
                            "resume": ResumePoint(
                                round=round_number,
                                input_responses=responses,
                                request_state=request_state,
                                last_updated_at=self._last_updated_at,
                            )
                        }
                    )
                )
            outcome = await self._run_leg(start, round_number, responses, request_state)
            if outcome.kind == "result":
                return self._complete(outcome)
            if outcome.kind == "error":
                self._fail(outcome.error or {"code": INTERNAL_ERROR, "message": "Task failed"})
            request_state = outcome.request_state
            if not outcome.input_requests:
                # A state-only round: a durable checkpoint; run the next leg now.
                responses = None
                continue
            responses = await self._ask(round_number, outcome.input_requests)
            self._transition("working")
        self._fail(
            {
                "code": INTERNAL_ERROR,
                "message": f"Task exceeded its limit of {start.max_rounds} rounds",
            }
        )

    async def _run_workflow_tool(self, start: TaskStart) -> TaskView:
        """A workflow tool: its workflow is the body; one last leg makes the result."""
        body_outcome = await self._run_body(start)
        outcome = await self._run_leg(start, 1, None, None, body_outcome=body_outcome)
        if outcome.kind != "result":
            self._fail(outcome.error or {"code": INTERNAL_ERROR, "message": "Task failed"})
        return self._complete(outcome)

    def _complete(self, outcome: LegOutcome) -> TaskView:
        self._result = outcome.result
        self._stored_result = outcome.stored_result
        self._final_progress = outcome.final_progress
        self._transition("completed")
        return self.view()

    async def _run_leg(
        self,
        start: TaskStart,
        round_number: int,
        responses: dict[str, Any] | None,
        request_state: str | None,
        *,
        body_outcome: BodyOutcome | None = None,
    ) -> LegOutcome:
        policy = start.leg_policy
        request = LegRequest(
            task_id=start.task_id,
            tool_name=start.tool_name,
            tool_version=start.tool_version,
            arguments=start.arguments,
            caller=start.caller,
            round=round_number,
            input_responses=responses,
            request_state=request_state,
            body_outcome=body_outcome,
            # A marker before this leg's command in new histories; replaying a
            # history without one schedules the leg exactly as it was.
            store_big_result=patched(start, RESULT_STORED_ONCE),
            progress_signals=policy.local and patched(start, LOCAL_LEG_PROGRESS),
        )
        local = runs_locally(start, responses)
        if not local and request.progress_signals:
            request = request.model_copy(update={"progress_signals": False})
        # Only the threshold of this check changed (1.9 MB before big payloads went
        # to external storage; tasks started before get TaskStart's default): a
        # history where the old one fired failed the workflow in this workflow
        # task, so no running task replays it (and tasks/get never queries a
        # closed one); every other history records no command for this check.
        size = workflow.payload_converter().to_payloads([request])[0].ByteSize()
        if size > start.max_payload_bytes:
            self._fail(
                {
                    "code": INVALID_PARAMS,
                    "message": (
                        f"The task's input for leg {round_number} (its arguments and answers) is "
                        f"too large ({size} bytes; the limit is {start.max_payload_bytes} bytes)"
                    ),
                }
            )
        workflow.set_current_details(
            f"Running **{start.tool_name}**, leg {round_number}. Its latest progress message "
            + (
                "is the task's status message (memo `mcp`)."
                if local
                else "is in the pending activity's heartbeat details."
            )
        )
        retry, until_deadline = leg_retry(start, local=local)
        try:
            if local:
                return await self._run_local_leg(
                    request,
                    timeout=timedelta(seconds=policy.local_timeout_s),
                    until_deadline=until_deadline,
                    retry=retry,
                )
            return await workflow.execute_activity(
                start.tool_name,
                request,
                result_type=LegOutcome,
                task_queue=policy.task_queue,
                start_to_close_timeout=timedelta(seconds=policy.start_to_close_timeout_s),
                schedule_to_close_timeout=until_deadline,
                heartbeat_timeout=timedelta(seconds=policy.heartbeat_timeout_s),
                retry_policy=retry,
                cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                summary=f"{start.tool_name} · leg {round_number}",
            )
        except (ActivityError, LegTimeoutError) as err:
            # A local leg that timed out on its last attempt is an ActivityError
            # when it happens, but a bare TimeoutError when the SDK replays its
            # marker: both must take the same path.
            if isinstance(err, ActivityError) and is_cancelled_exception(err):
                raise asyncio.CancelledError() from err
            if ended_while_cancelling(err, local=local) and patched(start, LEG_CANCEL_WINS_PATCH):
                raise asyncio.CancelledError() from err
            await self._after_failed_local_leg(request)
            if isinstance(err, ActivityError) and deadline_passed(err):
                self._fail({"code": TASK_EXPIRED, "message": expired_message(err, start.ttl_ms)})
            cause: FailureError = err.cause if isinstance(err, ActivityError) and err.cause else err
            reason = failure_reason(cause)
            self._fail({"code": INTERNAL_ERROR, "message": f"Tool leg failed: {reason}"})

    def _history_is_long(self, rounds_this_run: int) -> bool:
        return (
            rounds_this_run >= self._start.rounds_per_run
            or workflow.info().is_continue_as_new_suggested()
        )

    async def _ask(self, round_number: int, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Park in ``input_required`` until every request of this round is answered.

        Keys are minted from the round number, so they are unique for the task's
        whole life even when a tool reuses its own key on every leg. A parked
        task holds no worker slot; it waits at most until its TTL runs out
        (``createdAt + ttlMs``), then fails with a clear message.
        """
        self._outstanding = {
            f"{round_number}.{tool_key}": (tool_key, request)
            for tool_key, request in requests.items()
        }
        self._answers = {}
        self._transition("input_required")
        expires_at = self._start.created_at + timedelta(milliseconds=self._start.ttl_ms)
        remaining = (expires_at - workflow.now()).total_seconds()
        try:
            await workflow.wait_condition(
                lambda: not self._outstanding, timeout=max(remaining, 0.001)
            )
        except TimeoutError:
            self._outstanding = {}
            self._fail(
                {
                    "code": TASK_EXPIRED,
                    "message": (
                        "Task expired: no answer to its input requests within its TTL "
                        f"({self._start.ttl_ms} ms)"
                    ),
                }
            )
        return dict(self._answers)

    @workflow.signal(name=INPUT_SIGNAL)
    def deliver_input(self, delivery: InputDelivery) -> None:
        """Record answers; keys that are not outstanding are ignored (SEP-2663)."""
        if self._status != "input_required":
            return
        answered = False
        for key, response in delivery.responses.items():
            pending = self._outstanding.pop(key, None)
            if pending is not None:
                self._answers[pending[0]] = response
                answered = True
        if answered and self._outstanding:
            # A partial answer is a state change: the next poll shows the rest.
            self._touch()
            workflow.set_current_details(self._details())

    @workflow.query(name=VIEW_QUERY)
    def view(self) -> TaskView:
        start = self._start
        return TaskView(
            task_id=start.task_id,
            status=self._status,
            created_at=start.created_at,
            last_updated_at=self._last_updated_at,
            ttl_ms=start.ttl_ms,
            poll_interval_ms=start.poll_interval_ms,
            status_message=self._status_message or self._local_leg_message(),
            result=self._result,
            stored_result=self._stored_result,
            final_progress=self._final_progress,
            error=self._error,
            input_requests=(
                {key: request for key, (_, request) in self._outstanding.items()}
                if self._status == "input_required"
                else None
            ),
        )

    def _fail(self, error: dict[str, Any]) -> NoReturn:
        """End the task ``failed``: the workflow fails too, carrying the view."""
        self._error = error
        self._status_message = str(error.get("message") or "Task failed")
        self._transition("failed")
        raise ApplicationError(
            self._status_message,
            self.view(),
            type=FAILED_ERROR_TYPE,
            non_retryable=True,
        )

    def _transition(self, status: TaskStatus) -> None:
        changed = status != self._status
        if changed:
            self._metrics.changed(self._status, status)
        self._status = status
        if changed and self._start.search_attributes:
            workflow.upsert_search_attributes([TASK_STATUS_ATTRIBUTE.value_set(status)])
        if status != "working":
            workflow.set_current_details(self._details())
        self._touch()

    def _details(self) -> str:
        """The UI's *current details*: what the task waits for, or how it ended."""
        if self._status == "input_required":
            asks = [_describe_request(request) for _, request in self._outstanding.values()]
            text = "Waiting for the client's answer to:\n\n" + "\n".join(f"* {a}" for a in asks)
        elif self._status == "failed":
            text = f"Failed: {self._status_message or 'task failed'}"
        elif self._status == "completed":
            is_error = bool((self._result or {}).get("isError")) or bool(
                self._stored_result and self._stored_result.is_error
            )
            text = "Completed with a tool error (isError)" if is_error else "Completed"
        else:
            text = self._status.capitalize()
        return text if len(text) <= _DETAILS_LIMIT else text[: _DETAILS_LIMIT - 1] + "…"

    def _touch(self) -> None:
        self._last_updated_at = workflow.now()
        if self._status == "cancelled":
            return  # read from the memo's last state and Temporal's close time
        view = self.view()
        # ``final_progress`` stays out of the memo, and out of the size that decides
        # whether the memo is written: that decision is a command.
        if self._status in ("completed", "failed"):
            final = view.model_dump(mode="json", exclude={"final_progress"})
            if len(view.model_dump_json(exclude={"final_progress"})) <= FINAL_MEMO_LIMIT:
                workflow.upsert_memo({MEMO_KEY: final})
            return
        working = view.model_dump(mode="json", exclude={"result", "error", "final_progress"})
        workflow.upsert_memo({MEMO_KEY: working})


def _describe_request(request: dict[str, Any]) -> str:
    """One outstanding input request, as an operator reads it."""
    method = str(request.get("method") or "request")
    params = request.get("params")
    message = params.get("message") if isinstance(params, dict) else None
    if isinstance(message, str) and message:
        return f"{method}: {message}"
    return method


@workflow.defn(name=WORKFLOW_TYPE, sandboxed=False)
class McpTaskWorkflow(_TaskMachine):
    """Tasks started as plain ``McpTask`` (before the tool joined the type)."""

    @workflow.init
    def __init__(self, start: TaskStart) -> None:
        self._setup(start)

    @workflow.run
    async def run(self, start: TaskStart) -> TaskView:
        return await self._execute(start)


@workflow.defn(dynamic=True, sandboxed=False)
class McpToolTaskWorkflow(_TaskMachine):
    """Tasks started as ``McpTask:<tool>``: the Web UI's list names the tool.

    Dynamic, because the set of tools is the server's, not ours. It takes only
    its own types: anything else on the queue fails at once, non-retryable.
    """

    @workflow.init
    def __init__(self, args: Sequence[RawValue]) -> None:
        self._bad_input: str | None = None
        try:
            start = workflow.payload_converter().from_payload(args[0].payload, TaskStart)
        except Exception as err:  # not one of ours: fail it in run, never retry
            self._bad_input = f"{type(err).__name__}: {err}"
            start = TaskStart(
                task_id="?", tool_name="?", created_at=workflow.now(), ttl_ms=1, poll_interval_ms=1
            )
        self._setup(start)

    @workflow.run
    async def run(self, args: Sequence[RawValue]) -> TaskView:
        workflow_type = workflow.info().workflow_type
        if not workflow_type.startswith(WORKFLOW_TYPE_PREFIX) or self._bad_input:
            raise ApplicationError(
                f"Not an MCP task: workflow type {workflow_type!r} "
                f"({self._bad_input or 'expected McpTask:<tool>'})",
                type="McpNotATask",
                non_retryable=True,
            )
        return await self._execute(self._start)
