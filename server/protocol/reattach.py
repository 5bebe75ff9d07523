"""Asking again attaches: a plain call answered by the task its host gave up on.

A host that stops waiting for a plain ``tools/call`` (its timeout, a closed
stream, the server's own answer before the host's hard limit: ``host_limits``)
leaves the task running, or finished, with nobody to receive its result. When
the same caller calls the same tool with the same arguments while that task is
within its TTL, the call **attaches** to it: it waits for it, or answers at once
with how it ended. The body does not run again. Only such *undelivered* tasks
are attached to (``server.tasks.undelivered``: a record written when the host
gives up, consumed by the one call that delivers its result), so

- a result that reached its caller is never answered again: the next identical
  call is a new task;
- a call with an ``Idempotency-Key`` is the key's business (``idempotency``), not this;
- a tool whose every call must run afresh opts out: ``ToolOptions(attach_repeats=False)``;
- "the same caller" is the task scope: the authenticated principal, or all
  anonymous callers of the server, on both wires and whatever ``Mcp-Session-Id``
  they send -- as a plain call's anonymous idempotency keys (``idempotency``): a
  host that gave up often starts a new session (it restarted, or its front end
  did), and the call it makes again must still find its task. So on a server
  without auth, another anonymous caller who makes exactly the same call first
  receives the result; a tool whose result must stay with its caller opts out.

Cost per plain call that has nothing to attach to: one ``DescribeWorkflowExecution``
of the call's record id, which finds none.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from fastmcp.server.context import Context
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from fastmcp_temporal.server.core.wire import GetTaskResult
from fastmcp_temporal.server.protocol.idempotency import REQUEST_DIGEST_MEMO, requested_key
from fastmcp_temporal.server.tasks.engine import TaskEngine
from fastmcp_temporal.server.tasks.undelivered import CALL_KEY_MEMO, Undelivered

logger = logging.getLogger(__name__)


@dataclass
class Delivery:
    """Who may receive a plain call's result if this call does not: what it records, or takes.

    ``call_key``: the call as ``server.tasks.undelivered`` keys it (``None``: this call
    cannot be found again by its arguments); ``keyed``: it carries an idempotency key,
    which finds it again; ``attached``: the record this call took its task from.
    """

    call_key: str | None
    keyed: bool
    task_id: str | None = None
    expires_at: datetime | None = None
    attached: Undelivered | None = None

    @property
    def findable(self) -> bool:
        """Whether a later call can get this task's result (so the task is worth keeping)."""
        return self.call_key is not None or self.keyed

    @property
    def memo(self) -> dict[str, str]:
        """The task's memo entry that lets any front end record it as given up on."""
        return {CALL_KEY_MEMO: self.call_key} if self.call_key is not None else {}

    def of_task(self, task_id: str, created_at: str, ttl_ms: int | None) -> None:
        self.task_id = task_id
        if ttl_ms is not None:
            created = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
            self.expires_at = created + timedelta(milliseconds=ttl_ms)

    async def given_up(self, engine: TaskEngine) -> None:
        """Nobody received the result through this call: let the next identical call attach."""
        if self.call_key is None or self.task_id is None:
            return
        expires = self.expires_at or datetime.now(UTC) + timedelta(milliseconds=engine.ttl_ms)
        try:
            await engine.undelivered.record(self.call_key, self.task_id, expires)
        except Exception:  # the answer this call was going to give stands; only the record is lost
            logger.warning("Could not record task %s as undelivered", self.task_id, exc_info=True)

    async def take(self, engine: TaskEngine) -> bool:
        """This call may deliver the result: ``False`` when another call attached first took it."""
        if self.attached is None:
            return True
        return await engine.undelivered.consume(self.attached)


def delivery_for(
    engine: TaskEngine,
    tool_name: str,
    tool_version: str | None,
    arguments: dict[str, Any],
    context: Context,
    *,
    scope: str | None,
) -> Delivery:
    """How this plain call can be found again (see the module docstring)."""
    try:
        keyed = requested_key(context) is not None
    except MCPError:
        keyed = False  # a malformed key: the create refuses it
    if keyed or not engine.starter.attaches_repeats(tool_name):
        return Delivery(call_key=None, keyed=keyed)
    call_key = engine.undelivered.call_key(
        scope=scope,
        tool_name=tool_name,
        tool_version=tool_version,
        arguments=arguments,
    )
    return Delivery(call_key=call_key, keyed=False)


async def undelivered_task(
    engine: TaskEngine, delivery: Delivery, scope: str | None
) -> GetTaskResult | None:
    """The task a host gave up on for this call, as ``tasks/get`` shows it; ``None`` if none.

    A record whose task was cancelled (a person's decision, on any client) or has
    expired is consumed here: there is nothing to deliver, the call starts anew.
    """
    if delivery.call_key is None:
        return None
    record = await engine.undelivered.find(delivery.call_key)
    if record is None:
        return None
    try:
        view: GetTaskResult | None = await engine.get(record.task_id, scope)
    except MCPError as err:
        if err.code != INVALID_PARAMS:
            raise
        view = None
    if view is None or view.status == "cancelled":
        await engine.undelivered.consume(record)
        return None
    delivery.attached = record
    delivery.of_task(view.task_id, view.created_at, view.ttl_ms)
    return view


async def detach(engine: TaskEngine, task_id: str, scope: str | None) -> bool:
    """Leave the task running for its caller's next call; ``False`` if no call could find it.

    Read from the task's memo, so a front end that did not start the call can do it:
    a call key (recorded here as undelivered) or an idempotency key (found by it).
    """
    _, description = await engine.records.find(task_id, engine.workflow_ids(task_id, scope))
    fields = description.raw.workflow_execution_info.memo.fields
    if CALL_KEY_MEMO in fields:
        (call_key,) = await engine.client.data_converter.decode([fields[CALL_KEY_MEMO]], [str])
        view = await engine.records.memo_view(task_id, description)
        expires = view.created_at + timedelta(milliseconds=view.ttl_ms)
        await engine.undelivered.record(str(call_key), task_id, expires)
        return True
    return REQUEST_DIGEST_MEMO in fields
