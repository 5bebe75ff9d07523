"""Inside a function tool: a remote tool call as a durable step.

```python
from fastmcp_temporal import Steps, remote_step


@mcp.tool(task=True)
async def report(topic: str, ctx: Context) -> str:
    steps = Steps(ctx)
    found = await remote_step(steps, "search", "deep_report", {"q": topic})
    return found.content[0].text
```

The call is a ``Steps`` step whose recorded result is what ``tools/call``
answered: the remote *task id* (or a synchronous result). Recording it ends the
leg (a checkpoint); every later leg -- the next one, or a re-run after a worker
died -- finds the id and waits for that same remote task instead of creating a
second one. The create itself carries an idempotency key named by the step
(``remote_keys.step_key``): a leg that died after the remote answered but
before the checkpoint was recorded does not create a second task on a remote
that honours keys (ours). The wait runs inside the leg (listening or polling, the leg
heartbeating as always); the remote's status messages become this task's
progress; cancelling this task cancels the remote one.

What a function tool cannot do that a workflow tool can: relay the remote's
input requests to this task's client (a remote task that asks raises
``RemoteTaskError``), and wait without holding a worker slot -- the leg runs for
as long as the remote task does. Prefer a workflow tool (``remote(name)``) for
remote tasks that ask questions, run for hours, or fan out.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types
from temporalio import activity
from temporalio.exceptions import ApplicationError

from fastmcp_temporal.activities.remote_keys import step_key
from fastmcp_temporal.activities.remote_mcp import RemoteMcpActivities, configured_here
from fastmcp_temporal.activities.steps import Steps
from fastmcp_temporal.timing import TICK_S
from fastmcp_temporal.workflows.remote import RemoteTaskError
from fastmcp_temporal.workflows.remote_models import (
    RemoteCall,
    RemoteCallOutcome,
    RemoteCancel,
    RemoteTaskState,
    RemoteWait,
)

#: A status message is passed on to this task's progress at most this often.
PROGRESS_EVERY_S = TICK_S


async def remote_step(
    steps: Steps,
    server: str,
    tool: str,
    arguments: dict[str, Any] | None = None,
    *,
    name: str | None = None,
) -> mcp_types.CallToolResult:
    """Call ``tool`` on the worker's connection ``server``; a remote task is created once.

    ``name`` is the step's name (default ``remote <server>/<tool>``): give each
    call of the same tool in one body its own.
    """
    remotes = configured_here()
    call = RemoteCall(server=server, tool=tool, arguments=dict(arguments or {}))
    step = name or f"remote {server}/{tool}"
    started = await steps.run(
        step, remotes.start_call, call, step_key(step), result_type=RemoteCallOutcome
    )
    if started.task is None:
        return mcp_types.CallToolResult.model_validate(started.result or {})
    try:
        final = await _follow(steps, remotes, server, tool, started.task)
    except asyncio.CancelledError:
        details = activity.cancellation_details() if activity.in_activity() else None
        if details is None or not details.worker_shutdown:
            # This task was cancelled (not a worker drain): so is the remote one.
            await remotes.cancel(RemoteCancel(server=server, task_id=started.task.task_id))
        raise
    return mcp_types.CallToolResult.model_validate(final.result or {})


async def _follow(
    steps: Steps, remotes: RemoteMcpActivities, server: str, tool: str, state: RemoteTaskState
) -> RemoteTaskState:
    relayed: str | None = None
    while True:
        if state.status == "completed":
            return state
        if state.status in ("failed", "cancelled") or state.status == "input_required":
            detail = (state.error or {}).get("message") or state.status_message
            if state.status == "input_required":
                detail = "it asks for input, which only a workflow tool relays"
            message = f"Remote task {state.task_id} of {server}/{tool} {state.status}"
            raise RemoteTaskError(
                f"{message}: {detail}" if detail else message,
                server=server,
                tool=tool,
                task_id=state.task_id,
                status=state.status,
            )
        if state.status_message not in (None, relayed):
            relayed = state.status_message
            await steps.ctx.report_progress(0, None, relayed)
        wait = RemoteWait(
            server=server,
            tool=tool,
            task_id=state.task_id,
            status_message=relayed,
            progress_after_s=PROGRESS_EVERY_S,
        )
        state = await _waiting_out_outages(remotes, wait)


async def _waiting_out_outages(remotes: RemoteMcpActivities, wait: RemoteWait) -> RemoteTaskState:
    """``remotes.wait``, asked again while the remote is unreachable (e.g. restarting):
    the task id is recorded, so the wait can always resume."""
    delay = 0.2
    while True:
        try:
            return await remotes.wait(wait)
        except ApplicationError as err:
            if err.non_retryable:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
