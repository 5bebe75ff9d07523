"""Tasks whose result nobody received yet: a record any front end finds by the call that made it.

A host that gives up on a plain ``tools/call`` (its timeout, a closed stream, a
front end's early answer before the host's hard limit) leaves a task that runs on,
or has finished, with nobody to give its result to. Its model then asks again,
the same tool with the same arguments. To answer that call from the first task
(instead of running the body again), the front end that saw the host give up
writes an **undelivered-call record**:

- its id is ``mcpundelivered-<queue tag>-<call key>``, where the call key is an
  HMAC (the scope secret) of the caller, the tool, its version and the arguments
  in canonical JSON (``call_key``): no argument in clear, and the same for every
  front end, so a call finds its record with one ``DescribeWorkflowExecution``,
  whichever front end wrote it;
- it is a workflow of type ``McpUndeliveredCall`` on a task queue no worker
  polls (as the quota's slots, ``quota``): it never runs, it only *exists*, so
  no worker is needed to write, find or consume it; its memo names the task;
- it lives until the task's TTL ends (its execution timeout), or until a call
  consumes it.

**Delivered, at most once.** A call that attached to the record's task consumes the
record -- terminates that run of it, by run id -- *before* it answers with the
result; of any number of calls racing for it, on any number of front ends, one
termination succeeds, and only that call answers the result. The others (and every
later identical call) start a new task: a result is never answered twice. A front
end that dies between consuming and answering loses that answer (the task stays
readable with ``tasks/get`` for its TTL), and the host's next call runs the body
again: the same as a lost connection before this existed. The other order would
risk a second answer of one result, which a tool that must run afresh (a roll of the
dice, a new id) cannot take back.

What a call that asks for nothing costs: one ``DescribeWorkflowExecution`` that
finds no record (``server.protocol.reattach``). Records are written only when a
host gives up (one start) and consumed only when one attaches (one terminate).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from fastmcp_temporal.server.core.temporal_errors import workflow_not_found
from fastmcp_temporal.server.tasks.task_records import describe_raw

logger = logging.getLogger(__name__)

#: What a host's timeout does to a plain call's task: ``detach`` it (it runs on, and the
#: call made again attaches to it) or ``cancel`` it, as a person's cancel does.
HostTimeout = Literal["detach", "cancel"]
RECORD_WORKFLOW_TYPE = "McpUndeliveredCall"
#: The record's memo entry: the id of the task nobody received.
RECORD_TASK_MEMO = "mcp_undelivered_task"
#: The task's memo entry: the key of the call that started it, so that a front end that
#: learns the host gave up (a cancel, on any front end) can write its record.
CALL_KEY_MEMO = "mcp_call_key"
#: Keys the call key when the deployment has no scope secret.
_UNKEYED = b"fastmcp-temporal/undelivered-call"
#: The shortest life a record gets: a task just at its TTL is still read for a moment.
_MIN_LIFETIME = timedelta(seconds=5)


@dataclass(frozen=True)
class Undelivered:
    """One record: its run (so only this record is ever consumed) and the task it names."""

    workflow_id: str
    run_id: str
    task_id: str


class UndeliveredCalls:
    """Write, find and consume the undelivered-call records of one task queue."""

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str,
        scope_secret: bytes | None,
        query_timeout: timedelta,
    ) -> None:
        self.client = client
        self.scope_secret = scope_secret
        self.query_timeout = query_timeout
        self.queue_tag = hashlib.sha256(task_queue.encode()).hexdigest()[:8]
        self._task_queue = task_queue
        #: No worker polls it: records exist, they never run.
        self.record_queue = f"{task_queue}-undelivered"

    def call_key(
        self,
        *,
        scope: str | None,
        tool_name: str,
        tool_version: str | None,
        arguments: dict[str, Any],
    ) -> str:
        """The call's key: the same caller, tool, version and arguments give the same key."""
        names = [self._task_queue, scope, tool_name, tool_version, arguments]
        message = json.dumps(names, sort_keys=True, separators=(",", ":"), default=str)
        secret = self.scope_secret or _UNKEYED
        mac = hmac.new(secret, b"undelivered-call\0" + message.encode(), hashlib.sha256)
        return mac.hexdigest()[:48]

    def record_id(self, call_key: str) -> str:
        return f"mcpundelivered-{self.queue_tag}-{call_key}"

    async def find(self, call_key: str) -> Undelivered | None:
        """The record of an undelivered task of this call, if there is one (one describe)."""
        raw = await describe_raw(self.client, self.record_id(call_key), timeout=self.query_timeout)
        if raw is None:
            return None
        info = raw.workflow_execution_info
        payload = info.memo.fields.get(RECORD_TASK_MEMO)
        if info.status != WorkflowExecutionStatus.RUNNING.value or payload is None:
            return None  # consumed, or its task's TTL ended
        (task_id,) = await self.client.data_converter.decode([payload], [str])
        return Undelivered(info.execution.workflow_id, info.execution.run_id, str(task_id))

    async def record(self, call_key: str, task_id: str, expires_at: datetime) -> None:
        """Record that nobody received ``task_id``'s result; kept until ``expires_at``.

        A record of this call that is already there stays: it names a task nobody
        received either, and the next call attaches to that one.
        """
        lifetime = max(expires_at - datetime.now(UTC), _MIN_LIFETIME)
        try:
            await self.client.start_workflow(
                RECORD_WORKFLOW_TYPE,
                id=self.record_id(call_key),
                task_queue=self.record_queue,
                execution_timeout=lifetime,
                memo={RECORD_TASK_MEMO: task_id},
                static_summary=f"Undelivered result of task {task_id}",
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                rpc_timeout=self.query_timeout,
            )
        except WorkflowAlreadyStartedError:
            return

    async def consume(self, record: Undelivered) -> bool:
        """Take the record for one delivery: ``True`` for exactly one caller (see the module)."""
        handle = self.client.get_workflow_handle(record.workflow_id, run_id=record.run_id)
        try:
            await handle.terminate(reason="delivered", rpc_timeout=self.query_timeout)
        except RPCError as err:
            if not workflow_not_found(err):
                raise
            return False  # another call took it, or the task's TTL ended it
        return True
