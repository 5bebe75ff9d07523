"""Per-caller quota: at most N open tasks per caller, counted across every front end.

```python
TemporalTasks(max_open_tasks_per_caller=5)                      # every tool, together
TemporalTasks(tools={"render": ToolOptions(max_open_tasks_per_caller=1)})  # its own pool
```

Over the limit, ``tools/call`` answers ``-32001`` with ``data.retryable`` and
``data.retryAfterMs``: no task was created, asking again later is safe.

Why slots, not a count: visibility (``count_workflows``) is eventually
consistent, so twenty creators racing a limit of five would all read "four
open" and all start. Temporal's one strongly consistent primitive is the
uniqueness of a *running* workflow id. So a caller's pool is ``N`` slot ids,
``mcpquota-<queue>-<caller tag>-<pool>-<k>`` for ``k < N``, and a task may start
only after it *claimed* one: a start of ``McpQuotaSlot`` under that id with the
id-conflict policy ``FAIL`` -- of any number of racing claims on one id, from
any number of front ends, exactly one succeeds. The slot's memo names the
task's workflow id.

A slot workflow runs on a task queue no worker polls: it never executes, it
only *exists* while it holds its slot, so no worker is needed to count. It is
freed three ways, none needing a worker:

- lazily, by the next claim that finds every slot held: each slot whose task
  has ended (completed, failed, cancelled, expired) -- or whose task never
  appeared within ``CLAIM_GRACE`` (a front end died between claim and start)
  -- is terminated, by its run id so that a racing reclaim cannot end a fresh
  claim, and one of them is claimed;
- at once, when the task's start fails for a reason the client caused;
- at the latest by its execution timeout, the task's own (TTL + grace) plus
  ``CLAIM_GRACE``.

Cost (``bench/investigations/2026-12-01-create-guards``): a create under a quota describes
up to 8 of the caller's slots at once and starts one slot workflow; when those
are all held, it describes their tasks, terminates every slot whose task has
ended (in parallel) and claims one of them. A refusal has described every slot
and its task.

Anonymous callers share one pool: their session ids are chosen by the client,
so a pool per session would limit nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from mcp.shared.exceptions import MCPError
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionResponse
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from fastmcp_temporal.client_wire import TEMPORAL_UNAVAILABLE
from fastmcp_temporal.server.core.scope import scope_tag
from fastmcp_temporal.server.core.temporal_errors import workflow_not_found
from fastmcp_temporal.server.tasks import guard_events
from fastmcp_temporal.server.tasks.task_records import describe_raw

if TYPE_CHECKING:
    from fastmcp_temporal.server.tasks.starter import ToolOptions

logger = logging.getLogger(__name__)

SLOT_WORKFLOW_TYPE = "McpQuotaSlot"
#: The slot's memo entry: the workflow id of the task that holds it.
SLOT_TASK_MEMO = "mcp_slot_task"
#: How long a slot may name a task that does not exist yet (claimed, not started).
CLAIM_GRACE = timedelta(minutes=2)
#: The ``retryAfterMs`` hint: about one poll of a task that is about to end.
RETRY_AFTER_MS = 1000
#: The code of "not now; asking again is safe" (``server.protocol.temporal_busy``): a client
#: that already retries a busy server retries a full quota the same way.
OVER_QUOTA = TEMPORAL_UNAVAILABLE
_ALL_TOOLS = "all"
#: Slots described at once: a big pool is searched a few at a time, and a
#: create usually ends in the first batch.
_CHUNK = 8
_RUNNING = WorkflowExecutionStatus.RUNNING
#: Claims one creator may lose in a batch before it gives up (each loss is
#: another creator's win, so racing creators fill the batch long before this).
_CLAIMS_PER_CHUNK = 3 * _CHUNK


@dataclass(frozen=True)
class Slot:
    """One claimed slot: the run of its workflow, so only this claim is ever released."""

    workflow_id: str
    run_id: str


@dataclass(frozen=True)
class Pool:
    """Where a tool's tasks count: the caller's shared pool or the tool's own."""

    name: str
    limit: int
    label: str


class CallerQuota:
    """Admission of new tasks against the caller's open-task limit (module docstring)."""

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str,
        limit: int | None,
        tools: Mapping[str, ToolOptions],
        scope_secret: bytes | None,
        query_timeout: timedelta,
    ) -> None:
        if limit is not None and limit <= 0:
            raise ValueError("max_open_tasks_per_caller must be positive")
        self.client = client
        self.limit = limit
        self.tools = tools
        self.scope_secret = scope_secret
        self.query_timeout = query_timeout
        self.queue_tag = hashlib.sha256(task_queue.encode()).hexdigest()[:8]
        #: No worker polls it: slot workflows exist, they never run.
        self.slot_queue = f"{task_queue}-quota-slots"

    def pool_for(self, tool_name: str) -> Pool | None:
        """The tool's own pool if it has a limit, else the caller's shared one, else none."""
        options = self.tools.get(tool_name)
        if options is not None and options.max_open_tasks_per_caller is not None:
            name = "t" + hashlib.sha256(tool_name.encode()).hexdigest()[:12]
            return Pool(name, options.max_open_tasks_per_caller, f"tool {tool_name!r}")
        if self.limit is None:
            return None
        return Pool(_ALL_TOOLS, self.limit, "this server's task tools")

    def slot_ids(self, scope: str | None, pool: Pool) -> list[str]:
        caller = scope_tag(scope, self.scope_secret)
        return [f"mcpquota-{self.queue_tag}-{caller}-{pool.name}-{k}" for k in range(pool.limit)]

    async def admit(
        self, *, scope: str | None, tool_name: str, task_workflow_id: str, lifetime: timedelta
    ) -> Slot | None:
        """Claim a slot for the task about to start; ``None`` when no quota applies.

        Raises the retryable ``-32001`` when every slot holds an open task.
        """
        pool = self.pool_for(tool_name)
        if pool is None:
            return None
        ids = self.slot_ids(scope, pool)
        random.shuffle(ids)  # racing creators spread over the pool
        for start in range(0, len(ids), _CHUNK):
            if slot := await self._admit_in(
                ids[start : start + _CHUNK], task_workflow_id, lifetime
            ):
                return slot
        guard_events.quota_rejected(tool_name, pool.limit)
        raise MCPError(
            code=OVER_QUOTA,
            message=(
                f"Too many open tasks: this caller already has {pool.limit} open task(s) of "
                f"{pool.label}, the most this server allows. No task was created; call again "
                "when one has ended."
            ),
            data={"retryable": True, "retryAfterMs": RETRY_AFTER_MS, "limit": pool.limit},
        )

    async def _admit_in(
        self, ids: list[str], task_workflow_id: str, lifetime: timedelta
    ) -> Slot | None:
        """Claim a slot of ``ids`` that is free or whose task has ended; ``None`` if none is.

        One claim at a time, each after a fresh read: a lost claim means another
        creator holds that slot now, so the next attempt starts from what the
        slots say *then*. Racing creators thus learn from reads (cheap) that
        the pool is full, instead of from failed starts (writes) on every slot.
        Slots whose tasks have ended are all terminated at once (each must end
        once; the next creates then find them free).
        """
        for _ in range(_CLAIMS_PER_CHUNK):
            described = await asyncio.gather(*(self._describe(slot_id) for slot_id in ids))
            free: list[str] = []
            held: list[tuple[Slot, DescribeWorkflowExecutionResponse]] = []
            for slot_id, raw in zip(ids, described, strict=True):
                if raw is None or raw.workflow_execution_info.status != _RUNNING:
                    free.append(slot_id)
                else:
                    held.append((Slot(slot_id, raw.workflow_execution_info.execution.run_id), raw))
            if not free:
                ended = await asyncio.gather(*(self._has_ended(raw) for _, raw in held))
                stale = [slot for (slot, _), gone in zip(held, ended, strict=True) if gone]
                await asyncio.gather(*(self._terminate(slot) for slot in stale))
                free = [slot.workflow_id for slot in stale]
            if not free:
                return None
            if slot := await self._claim(random.choice(free), task_workflow_id, lifetime):
                return slot
        return None  # lost every claim: the pool is as good as full, ask again later

    async def release(self, slot: Slot) -> None:
        """Free a slot whose task did not start."""
        await self._terminate(slot)

    async def _describe(self, workflow_id: str) -> DescribeWorkflowExecutionResponse | None:
        return await describe_raw(self.client, workflow_id, timeout=self.query_timeout)

    async def _claim(self, slot_id: str, task_workflow_id: str, lifetime: timedelta) -> Slot | None:
        """Start the slot's workflow; ``None`` if a running one holds the id (someone else won)."""
        try:
            handle = await self.client.start_workflow(
                SLOT_WORKFLOW_TYPE,
                id=slot_id,
                task_queue=self.slot_queue,
                execution_timeout=lifetime + CLAIM_GRACE,
                memo={SLOT_TASK_MEMO: task_workflow_id},
                static_summary=f"Quota slot of {task_workflow_id}",
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                rpc_timeout=self.query_timeout,
            )
        except WorkflowAlreadyStartedError:
            return None
        assert handle.result_run_id is not None  # a started workflow always has its run id
        return Slot(slot_id, handle.result_run_id)

    async def _has_ended(self, slot: DescribeWorkflowExecutionResponse) -> bool:
        """Whether a held slot's task has ended, or never started within ``CLAIM_GRACE``."""
        info = slot.workflow_execution_info
        payload = info.memo.fields.get(SLOT_TASK_MEMO)
        if payload is None:
            return True
        (task_workflow_id,) = await self.client.data_converter.decode([payload], [str])
        task = await self._describe(str(task_workflow_id))
        if task is None:
            claimed_at = info.start_time.ToDatetime(tzinfo=UTC)
            return datetime.now(UTC) - claimed_at > CLAIM_GRACE
        return task.workflow_execution_info.status != _RUNNING

    async def _terminate(self, slot: Slot) -> None:
        handle = self.client.get_workflow_handle(slot.workflow_id, run_id=slot.run_id)
        try:
            await handle.terminate(reason="its task ended", rpc_timeout=self.query_timeout)
        except RPCError as err:
            if not workflow_not_found(err):
                raise
            # Already ended: another front end reclaimed it first.
