"""What a client's ``notifications/cancelled`` does to the task of a durable plain call.

One decision, wherever the cancel arrives -- on the front end that holds the call
(the SDK tells the call, ``sync_calls``) or on any other front end of the
deployment (``cancel_elsewhere``, from the HTTP seam): ``peer_cancel``. A cancel
is either

- **a person's decision** -- no ``reason``, or a reason that is not a timeout,
  and ``tasks/cancel`` (not this path) -- which cancels the task, as always; or
- **the host's timeout** (``host_limits.is_host_timeout``: "Request timed out" and
  the other wordings the measured hosts send). The host stopped waiting, nobody
  decided the work is unwanted: the task is **detached** -- it runs on, its result
  kept for its TTL, and the same call made again attaches to it (``reattach``).
  A call nothing could find again (a tool that opted out of attaching, without
  an idempotency key) is cancelled instead: its result could reach nobody.
  ``TemporalTasks(on_host_timeout="cancel")`` (``FASTMCP_TEMPORAL_ON_HOST_TIMEOUT``)
  makes a timeout cancel too.

A timeout that lands on another front end detaches the task there; the front end
holding the call answers it when the task ends, into a stream its host no longer
reads, and the record ``detach`` wrote still lets the call made again attach.
"""

from __future__ import annotations

import logging

from mcp.shared.exceptions import MCPError
from temporalio.service import RPCError

from fastmcp_temporal.server.protocol.host_limits import is_host_timeout
from fastmcp_temporal.server.protocol.live_calls import LiveCalls
from fastmcp_temporal.server.protocol.reattach import detach
from fastmcp_temporal.server.tasks.engine import TaskEngine

logger = logging.getLogger(__name__)


async def peer_cancel(
    engine: TaskEngine, task_id: str, scope: str | None, reason: str | None
) -> None:
    """Cancel the task of a plain call whose client cancelled it, or detach it on a timeout."""
    timeout = is_host_timeout(reason) and engine.on_host_timeout == "detach"
    if timeout and await detach(engine, task_id, scope):
        logger.info("Task %s goes on: its host stopped waiting (%s)", task_id, reason)
        return
    logger.info("fastmcp-temporal: the client cancelled the call of task %s (%s)", task_id, reason)
    await engine.cancel(task_id, scope)


async def cancel_elsewhere(
    engine: TaskEngine,
    calls: LiveCalls,
    session_id: str,
    scope: str | None,
    request_id: str,
    reason: object,
) -> None:
    """A cancel for a call this front end does not hold: its task, if it is a durable call's.

    The task id is what the front end that started it derived from the session, the
    caller and the request id (``LiveCalls.call_task_id``). No such task (a call
    that was not durable, one keyed by an ``Idempotency-Key``, a request long over):
    nothing to do, as for a cancel of an unknown request.
    """
    task_id = calls.call_task_id(session_id, scope, request_id)
    try:
        await peer_cancel(engine, task_id, scope, reason if isinstance(reason, str) else None)
    except MCPError:
        logger.debug("fastmcp-temporal: a cancel of request %s named no task", request_id[:64])
    except RPCError as err:
        logger.warning(
            "fastmcp-temporal: a cancel of task %s did not reach Temporal: %s", task_id, err
        )
