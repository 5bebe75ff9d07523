"""Before a task's workflow starts: its idempotency key, then its caller's quota.

The order is the point. Under a quota, a call whose key names a live task is
answered with that task before the quota is asked: it creates nothing, so a
client retrying a lost answer gets its task even when it is at its limit. A
call that does create a task holds a quota slot from before its workflow
starts (see ``server.tasks.quota``), and gives it back only when nothing was started.

Without a quota a keyed call just starts its workflow: the derived id makes
Temporal refuse a duplicate, and only then is the existing task read -- so a
new key costs what no key costs. Two concurrent calls with one new key: one
start wins, the other fails as a duplicate and answers with the winner's task,
on any number of front ends.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

from fastmcp.server.context import Context
from mcp.shared.exceptions import MCPError
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from fastmcp_temporal.server.core.temporal_errors import namespace_not_found
from fastmcp_temporal.server.core.wire import CreateTaskResult
from fastmcp_temporal.server.protocol import idempotency
from fastmcp_temporal.server.tasks import guard_events
from fastmcp_temporal.server.tasks.engine import TaskEngine, mint_task_id, workflow_id_for
from fastmcp_temporal.server.tasks.starter import EXPIRY_GRACE


async def start_guarded(
    engine: TaskEngine,
    context: Context,
    *,
    scope: str | None,
    tool_name: str,
    tool_version: str | None,
    arguments: dict[str, Any],
    start: Callable[..., Awaitable[CreateTaskResult]],
    session_bound_keys: bool = True,
    memo: Mapping[str, Any] | None = None,
) -> CreateTaskResult:
    """Answer a keyed retry with its task, else admit the new task and ``start`` it.

    ``start`` is ``TaskEngine.start`` with the call bound; the guards pass its
    ``task_id``, ``memo`` and ``reuse_id``. ``session_bound_keys``: see
    ``idempotency.keyed_call``. ``memo``: the caller's own entries for the task's memo.
    """
    keyed = idempotency.keyed_call(
        engine,
        context,
        scope=scope,
        tool_name=tool_name,
        tool_version=tool_version,
        arguments=arguments,
        session_bound=session_bound_keys,
    )
    reuse_id = False
    if keyed is not None and engine.quota.pool_for(tool_name) is not None:
        # Asked before the quota: a retry must neither need nor take a slot.
        found, reuse_id = await idempotency.existing_task(engine, keyed, scope)
        if found is not None:
            guard_events.idempotent_hit(tool_name)
            return found
    task_id = keyed.task_id if keyed is not None else mint_task_id()
    ttl = timedelta(milliseconds=engine.starter.ttl_ms(tool_name, engine.ttl_ms))
    slot = await engine.quota.admit(
        scope=scope,
        tool_name=tool_name,
        task_workflow_id=workflow_id_for(task_id, scope, engine.scope_secret),
        lifetime=ttl + EXPIRY_GRACE,
    )
    memo = {**(memo or {}), **(keyed.memo if keyed is not None else {})}
    try:
        while True:
            try:
                return await start(task_id=task_id, memo=memo, reuse_id=reuse_id)
            except WorkflowAlreadyStartedError:
                # A keyed call whose key is taken: by a live task (a retry, or a
                # concurrent call that won), or by one that expired (start anew).
                if keyed is None:
                    raise
                found, expired = await idempotency.existing_task(engine, keyed, scope)
                if found is None and expired and not reuse_id:
                    reuse_id = True
                    continue
                if found is None:
                    raise
                if slot is not None:
                    await engine.quota.release(slot)
                guard_events.idempotent_hit(tool_name)
                return found
    except (MCPError, WorkflowAlreadyStartedError, RPCError) as err:
        # Nothing was started (refused before the start, e.g. arguments too large,
        # a conflicting key, or Temporal unable to look up its namespace). Any
        # other failure may have started the task: its slot stays, reclaimed once
        # the task has ended or never appeared (``quota.CLAIM_GRACE``).
        if isinstance(err, RPCError) and not namespace_not_found(err):
            raise
        if slot is not None:
            await engine.quota.release(slot)
        raise
