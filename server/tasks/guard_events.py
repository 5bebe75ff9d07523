"""What the creation guards decided, in one place: the hook for logs and metrics.

Each outcome is one call here, so counting them (metrics) needs no change to the
guards themselves. The log lines are on ``fastmcp_temporal.server.tasks.guard_events``
at INFO, with stable wording.
"""

from __future__ import annotations

import logging

from fastmcp_temporal.server.core import metrics

logger = logging.getLogger(__name__)


def idempotent_hit(tool_name: str) -> None:
    """A ``tools/call`` with a known idempotency key was answered with its existing task."""
    logger.info("idempotent hit: tool=%s", tool_name)
    metrics.record_idempotent_hit(tool_name)


def quota_rejected(tool_name: str, limit: int) -> None:
    """A ``tools/call`` was refused because its caller had ``limit`` open tasks."""
    logger.info("quota rejected: tool=%s limit=%d", tool_name, limit)
    metrics.record_quota_rejection(tool_name)
