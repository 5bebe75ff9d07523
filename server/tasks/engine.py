"""The task engine: SEP-2663 operations expressed as Temporal calls.

| MCP                        | Temporal                                              |
|----------------------------|-------------------------------------------------------|
| ``tools/call`` -> task     | ``start_workflow`` (returns once the start is durable) |
| ``tasks/get`` (open)       | ``describe``: memo of the last state change + the leg's |
|                            | heartbeat; a parked task's unapplied answers from the   |
|                            | history's tail (``pending_input``)                      |
| ``tasks/get`` (closed)     | the finished view in the memo; a big one from the       |
|                            | workflow's result / failure (``task_records``)          |
| ``tasks/update``           | signal ``mcp_input`` (durable when the RPC returns)    |
| ``tasks/cancel``           | workflow cancellation                                  |

Task ids are minted here, never by the workflow. A task belongs to its caller's
scope, and the scope is part of the workflow id (as a keyed tag, see
``scope``): another caller's lookup names a workflow that does not exist, so
"not yours" and "no such task" are the same answer by construction, whether or
not a worker is up. An expired task is "no such task" to all three methods.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
)
from temporalio.service import RPCError

from fastmcp_temporal.activities.input_capabilities import input_capabilities
from fastmcp_temporal.server.core.scope import lookup_tags, scope_tag
from fastmcp_temporal.server.core.temporal_errors import workflow_not_found
from fastmcp_temporal.server.core.wire import (
    CreateTaskResult,
    GetTaskResult,
    invalid_params,
    iso,
    task_not_found,
)
from fastmcp_temporal.server.tasks import poll_interval
from fastmcp_temporal.server.tasks.client_values import accepted_answers, encoded_size
from fastmcp_temporal.server.tasks.leg_status import LegStatus
from fastmcp_temporal.server.tasks.pending_input import (
    StaleDescription,
    unapplied,
    until_recorded,
    with_unapplied,
)
from fastmcp_temporal.server.tasks.quota import CallerQuota
from fastmcp_temporal.server.tasks.starter import ToolOptions, WorkflowStarter
from fastmcp_temporal.server.tasks.stuck_bodies import Stuck, StuckBodies
from fastmcp_temporal.server.tasks.task_records import TaskDescription, TaskRecords
from fastmcp_temporal.server.tasks.undelivered import HostTimeout, UndeliveredCalls
from fastmcp_temporal.workflows.models import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    INPUT_CAPABILITIES_MEMO,
    INPUT_SIGNAL,
    CallerSnapshot,
    InputDelivery,
    LegPolicy,
    ProgressReport,
    TaskStart,
    TaskView,
    UndeclaredInput,
    WorkflowBody,
)
from fastmcp_temporal.workflows.patches import PATCH_LEVEL
from fastmcp_temporal.workflows.task_workflow import MEMO_KEY

#: Temporal rejects payloads of 2 MB or more: the ceiling without external storage.
INLINE_LIMIT_BYTES = 1_900_000
#: Re-reads when the workflow applies a change between ``describe`` and the history read.
_STALE_RETRIES = 3
_TASK_ID = re.compile(r"^[A-Za-z0-9_-]{16,128}$")


@dataclass(frozen=True)
class TaskRead:
    """One read of a task: ``tasks/get``'s answer, and its running leg's last report;
    ``stuck``: what in its body keeps failing (then the ``statusMessage`` says so)."""

    task: GetTaskResult
    report: ProgressReport | None = None
    #: A workflow tool's last few progress lines, ``(seq, message)`` (``LegStatus.lines``).
    lines: tuple[tuple[int, str], ...] | None = None
    stuck: Stuck | None = None


def mint_task_id() -> str:
    """192 bits from the OS's CSPRNG, URL-safe: unguessable, usable as a bearer token.

    Never with a leading ``-``: one id in 64 would otherwise read as an option to
    ``fastmcp-temporal tasks show`` and every other command line an operator pastes it into.
    """
    while (task_id := secrets.token_urlsafe(24)).startswith("-"):
        pass
    return task_id


def workflow_id_for(task_id: str, scope: str | None, secret: bytes | None = None) -> str:
    """``mcp-<scope tag>-<task id>``: the task id is visible to operators, the scope is not."""
    return f"mcp-{scope_tag(scope, secret)}-{task_id}"


class TaskEngine:
    """SEP-2663 task operations against one Temporal namespace and task queue."""

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str,
        ttl_ms: int,
        query_timeout: timedelta,
        leg_policy: LegPolicy,
        max_rounds: int,
        rounds_per_run: int = 200,
        eager_start: bool = False,
        tools: Mapping[str, ToolOptions] | None = None,
        scope_secret: bytes | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        undeclared_input: UndeclaredInput = "park",
        max_open_tasks_per_caller: int | None = None,
        on_host_timeout: HostTimeout = "detach",
    ) -> None:
        self.client = client
        #: What a host's timeout cancel does to a plain call's task (``protocol.peer_cancels``).
        self.on_host_timeout: HostTimeout = on_host_timeout
        #: The rule ``create_task`` stamps on each new task (``CallerSnapshot.undeclared_input``).
        self.undeclared_input: UndeclaredInput = undeclared_input
        self.scope_secret = scope_secret
        # Without external storage, Temporal's own limit is the honest one.
        self.max_payload_bytes = (
            max_payload_bytes
            if client.data_converter.external_storage is not None
            else min(max_payload_bytes, INLINE_LIMIT_BYTES)
        )
        self.starter = WorkflowStarter(client, task_queue=task_queue, tools=tools or {})
        self.eager_start = eager_start
        self.rounds_per_run = rounds_per_run
        self.task_queue = task_queue
        self.ttl_ms = ttl_ms
        self.query_timeout = query_timeout
        self.leg_policy = leg_policy
        self.max_rounds = max_rounds
        self.records = TaskRecords(client, ttl_ms=ttl_ms, query_timeout=query_timeout)
        self.bodies = StuckBodies(client, query_timeout=query_timeout)
        self.quota = CallerQuota(
            client,
            task_queue=task_queue,
            limit=max_open_tasks_per_caller,
            tools=tools or {},
            scope_secret=scope_secret,
            query_timeout=query_timeout,
        )
        #: Tasks a host gave up on, found again by their call (``protocol.reattach``).
        self.undelivered = UndeliveredCalls(
            client, task_queue=task_queue, scope_secret=scope_secret, query_timeout=query_timeout
        )

    # -- creation -------------------------------------------------------------

    async def start(
        self,
        *,
        scope: str | None,
        tool_name: str,
        tool_version: str | None,
        arguments: dict[str, Any],
        poll_interval_ms: int,
        caller: CallerSnapshot,
        input_responses: dict[str, Any] | None = None,
        request_state: str | None = None,
        body: WorkflowBody | None = None,
        tool_timeout_s: float | None = None,
        task_id: str | None = None,
        memo: Mapping[str, Any] | None = None,
        reuse_id: bool = False,
    ) -> CreateTaskResult:
        """Start the task's workflow; returns once ``tasks/get`` would resolve.

        ``tool_timeout_s`` (the FastMCP tool's ``timeout``) marks a short tool,
        whose legs run as local activities unless its ``ToolOptions`` say otherwise.

        ``start_workflow`` answers after the server persisted the start, so the
        durable-creation MUST holds without polling.

        ``task_id``, extra ``memo`` entries and ``reuse_id``: set by the creation
        guards (``server.protocol.create_guards``); by default a fresh id.
        """
        task_id = task_id or mint_task_id()
        created_at = datetime.now(UTC)
        ttl_ms = self.starter.ttl_ms(tool_name, self.ttl_ms)
        start = TaskStart(
            task_id=task_id,
            tool_name=tool_name,
            tool_version=tool_version,
            arguments=arguments,
            created_at=created_at,
            ttl_ms=ttl_ms,
            poll_interval_ms=poll_interval_ms,
            caller=caller,
            leg_policy=self.starter.leg_policy(
                tool_name, self.leg_policy, tool_timeout_s=tool_timeout_s
            ),
            max_rounds=self.max_rounds,
            rounds_per_run=self.rounds_per_run,
            input_responses=input_responses,
            request_state=request_state,
            body=body,
            max_payload_bytes=self.max_payload_bytes,
            # New tasks record no marker for a patch this release folded in.
            patch_level=PATCH_LEVEL,
        )
        self._check_payload_size(start, arguments, "arguments", "The tool arguments are")
        initial = TaskView(
            task_id=task_id,
            status="working",
            created_at=created_at,
            last_updated_at=created_at,
            ttl_ms=ttl_ms,
            poll_interval_ms=poll_interval_ms,
        )
        task_memo: dict[str, Any] = {MEMO_KEY: initial.model_dump(mode="json"), **(memo or {})}
        if caller.client_capabilities is not None:
            task_memo[INPUT_CAPABILITIES_MEMO] = input_capabilities(caller.client_capabilities)
        run_id = await self.starter.start(
            start,
            id=workflow_id_for(task_id, scope, self.scope_secret),
            memo=task_memo,
            reuse_id=reuse_id,
            # With a worker in this process, the start hands it the first
            # workflow task directly instead of a round trip through its poller.
            request_eager_start=self.eager_start,
        )
        created = CreateTaskResult(
            task_id=task_id,
            status="working",
            created_at=iso(created_at),
            last_updated_at=iso(created_at),
            ttl_ms=ttl_ms,
            poll_interval_ms=poll_interval_ms,
        )
        created._started_run_id = run_id
        return poll_interval.adapt(created, now=created_at)

    def _check_payload_size(
        self, value: TaskStart | InputDelivery, client_part: Any, root: str, what: str
    ) -> None:
        """Refuse input above the ceiling before anything is started or signalled."""
        size = encoded_size(self.client.data_converter.payload_converter, value, client_part, root)
        if size > self.max_payload_bytes:
            raise invalid_params(
                f"{what} too large for a durable task ({size} bytes; this server's limit is "
                f"{self.max_payload_bytes} bytes). Pass a reference to the data instead."
            )

    # -- tasks/get ------------------------------------------------------------

    async def get(self, task_id: str, scope: str | None) -> GetTaskResult:
        """Answer ``tasks/get`` (see ``read``)."""
        return (await self.read(task_id, scope)).task

    async def read(self, task_id: str, scope: str | None) -> TaskRead:
        """``tasks/get``'s answer with one ``describe`` in the common case, and what
        the running leg last reported (numbers included: ``notifications/progress``).

        The workflow writes its state to the memo at every state change, in the
        same workflow task that changes it, and the running leg's progress is in
        its heartbeat details, so ``describe`` alone is the last durable state
        (about 2 ms, no worker involved). A pending workflow task that applies a
        finished leg or the start changes nothing a client has seen yet: the
        task is ``working`` until the workflow records otherwise. A parked task
        with a pending workflow task may hold a ``tasks/update`` the workflow
        has not applied: its answers are read from the history's unapplied tail
        (``pending_input``), so a poll right after ``tasks/update`` sees its
        effect with or without a worker, and no read waits on a worker.

        A body that keeps failing (``stuck_bodies``: a failing workflow task, an
        activity retrying, an activity type or a queue nobody serves) is said in
        the ``statusMessage`` of the task, read from the same ``describe`` (and,
        for a workflow tool, its body's, which its progress needs anyway).
        """
        handle, description = await self._locate(task_id, scope)
        for attempt in range(_STALE_RETRIES):
            if attempt:
                description = await self.records.describe(task_id, handle.id)
            if description.status != WorkflowExecutionStatus.RUNNING:
                closed = await self.records.closed_view(
                    task_id, handle, description.status, description
                )
                return TaskRead(poll_interval.adapt(closed))
            view = await self.records.memo_view(task_id, description)
            if view.status == "input_required" and description.has_pending_workflow_task:
                try:
                    changes = await unapplied(self.client, description)
                except StaleDescription:
                    continue  # the workflow just applied a change: read again (then the memo)
                view = with_unapplied(view, changes)
            break
        if undeclared := await self.records.undeclared_input_message(view, description):
            # Says why nobody answers; it outranks a workflow tool's last progress line.
            return TaskRead(poll_interval.adapt(GetTaskResult.from_view(view, undeclared)))
        if view.status not in ("working", "input_required"):
            return TaskRead(poll_interval.adapt(GetTaskResult.from_view(view)))
        health = await self.bodies.health(description.raw)
        stuck = health.stuck
        if stuck is not None and stuck.settled:
            task = GetTaskResult.from_view(view, stuck.message)
            return TaskRead(poll_interval.adapt(task), stuck=stuck)
        if body := await self.records.progress(description, health.body):
            task = GetTaskResult.from_view(view, body.message, body.changed_at)
            return TaskRead(poll_interval.adapt(task), body.report, body.lines, stuck)
        return TaskRead(poll_interval.adapt(GetTaskResult.from_view(view)), stuck=stuck)

    async def body_progress(self, task_id: str, scope: str | None) -> LegStatus | None:
        """A workflow tool's last report and lines, from its workflow's memo, also once it
        closed: the task's end does not carry them (a leg's outcome carries a function
        tool's), so a waiting call reads them here before it answers."""
        body_id = f"{workflow_id_for(task_id, scope, self.scope_secret)}-body"
        return await self.records.body_progress(body_id)

    # -- tasks/update ---------------------------------------------------------

    async def update(self, task_id: str, scope: str | None, responses: dict[str, Any]) -> None:
        """Deliver answers as one signal; durable and readable when this returns.

        Answers for keys that are outstanding are validated first (a malformed
        one rejects the whole update and changes nothing); answers for any other
        key are dropped here, as the workflow would drop them.
        """
        handle, description = await self._locate(task_id, scope)
        if description.status != WorkflowExecutionStatus.RUNNING:
            # A finished task ignores answers; an expired one is not found.
            await self.records.closed_view(
                task_id, handle, description.status, description, read_result=False
            )
            return
        view = await self.records.memo_view(task_id, description)
        if view.status == "input_required" and description.has_pending_workflow_task:
            # Keys answered by a signal the workflow has not applied yet are not
            # outstanding any more: a repeated update (a client's retry) is not
            # signalled again. Besides history, it spares a local leg that runs in
            # that workflow task a signal racing its end (see workflows.local_legs).
            try:
                view = with_unapplied(view, await unapplied(self.client, description))
            except StaleDescription:
                description = await self.records.describe(task_id, handle.id)
                view = await self.records.memo_view(task_id, description)
        outstanding = (view.input_requests or {}) if view.status == "input_required" else {}
        accepted = accepted_answers(responses, outstanding)
        if not accepted:
            return
        delivery = InputDelivery(responses=accepted)
        self._check_payload_size(delivery, accepted, "inputResponses", "The input responses are")
        try:
            await handle.signal(INPUT_SIGNAL, delivery)
        except RPCError as err:
            if not workflow_not_found(err):
                raise
            # Closed between describe and signal: answers to a finished task are a no-op.
            return
        # Durable now; readable once in the history (a buffered signal is not yet).
        await until_recorded(self.client, description)

    # -- tasks/cancel ---------------------------------------------------------

    async def cancel(self, task_id: str, scope: str | None) -> None:
        """Request cancellation; a finished task is left as it is, an expired one is not found.

        Terminal states never change, so cancelling a finished task is an ack
        that does nothing (the conformance suite requires the ack); past its
        TTL the task does not exist for clients, as for ``tasks/get`` and
        ``tasks/update``. A parked task is ``cancelled`` for every read once this
        returns (``pending_input``), with or without a worker: nothing else
        runs in it, so the request is sure to end it, and no later answer resumes it.
        A running leg is asked to stop, which it does at its next heartbeat: such a
        task reads ``working`` until it has (SEP-2663's cancellation is cooperative).
        """
        handle, description = await self._locate(task_id, scope)
        if description.status != WorkflowExecutionStatus.RUNNING:
            await self.records.closed_view(
                task_id, handle, description.status, description, read_result=False
            )
            return
        try:
            await handle.cancel(rpc_timeout=self.query_timeout)
        except RPCError as err:
            if not workflow_not_found(err):
                raise
            # Closed between describe and cancel: it just finished, and stays as it ended.
            return
        if (await self.records.memo_view(task_id, description)).status == "input_required":
            # Readable once in the history (a buffered request is not yet).
            await until_recorded(self.client, description, cancel=True)

    # -- shared ---------------------------------------------------------------

    def workflow_ids(self, task_id: str, scope: str | None) -> Sequence[str]:
        """Where the task may be: under its keyed scope tag, then the unkeyed one of older tasks."""
        if not _TASK_ID.match(task_id):
            raise task_not_found(task_id)
        return [f"mcp-{tag}-{task_id}" for tag in lookup_tags(scope, self.scope_secret)]

    async def _locate(
        self, task_id: str, scope: str | None
    ) -> tuple[WorkflowHandle[Any, TaskView], TaskDescription]:
        workflow_id, description = await self.records.find(
            task_id, self.workflow_ids(task_id, scope)
        )
        return self.client.get_workflow_handle(workflow_id, result_type=TaskView), description
