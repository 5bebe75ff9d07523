"""What a client's ``notifications/cancelled`` does to the task of a durable plain call.

One decision, wherever the cancel arrives (the front end the call waits on, or
another one of the deployment): ``peer_cancel``. A cancel is either

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
"""

from __future__ import annotations

import logging

from fastmcp_temporal.server.protocol.host_limits import is_host_timeout
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
    await engine.cancel(task_id, scope)
