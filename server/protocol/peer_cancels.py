"""What a client's ``notifications/cancelled`` does to a durable plain call's task.

One decision, wherever the cancel lands: on the front end that holds the call
(the SDK tells the call, ``sync_calls``) or on any other front end of the
deployment (``cancel_elsewhere``, from the HTTP seam), ``peer_cancel`` decides.
"""

from __future__ import annotations

import logging

from mcp.shared.exceptions import MCPError
from temporalio.service import RPCError

from fastmcp_temporal.server.protocol.live_calls import LiveCalls
from fastmcp_temporal.server.tasks.engine import TaskEngine

logger = logging.getLogger(__name__)


async def peer_cancel(
    engine: TaskEngine, task_id: str, scope: str | None, reason: str | None
) -> None:
    """The client cancelled the call whose task is ``task_id``: the task is its work, cancel it."""
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
