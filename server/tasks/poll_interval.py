"""Adaptive ``pollIntervalMs``: short while a task is young or busy, long once it is quiet.

A client that honours ``pollIntervalMs`` learns that a task finished at most
one interval late, so a constant 5 s interval makes a 2 s task take up to 7 s
for its caller. SEP-2663 lets the interval change over a task's life (R14), so
each ``CreateTaskResult`` and ``tasks/get`` carries the interval for *now*::

    interval = clamp(max(AGE_SHARE * age, SILENCE_SHARE * silence), FLOOR_MS, ceiling)

where ``age = now - createdAt``, ``silence = now - lastUpdatedAt`` and the
ceiling is the tool's ``TaskConfig.poll_interval`` (FastMCP's default 5 s, or
the tool's explicit value, which is never exceeded). With the defaults a
client polls every 200 ms for the first two seconds, a silent task's interval
reaches 5 s at 50 s of age, and a task that reports state changes stays near
5 % of its age. A polling client therefore learns of completion about
``SILENCE_SHARE`` (10 %) of the task's run time late at worst; a silent
one-minute task costs about 45 polls instead of 12, a long one no more polls
per minute than the fixed interval once it is past 50 s.
A finished task keeps the ceiling: there is nothing left to wait for.

Computed on the front end from the task's own timestamps: no workflow state,
no extra reads, the same answer on every replica.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypeVar

from fastmcp_temporal.server.core.wire import TERMINAL_STATUSES, CreateTaskResult, GetTaskResult

#: The first interval of every task; never above the tool's own interval.
FLOOR_MS = 200
#: The interval grows by this share of the task's age...
AGE_SHARE = 0.05
#: ...and by this share of the time since its last state change.
SILENCE_SHARE = 0.1
_Task = TypeVar("_Task", CreateTaskResult, GetTaskResult)


def interval_ms(
    *, created_at: datetime, last_updated_at: datetime, now: datetime, ceiling_ms: int
) -> int:
    """The polling interval for a task that is not finished yet."""
    age_ms = max((now - created_at).total_seconds() * 1000, 0.0)
    silence_ms = max((now - last_updated_at).total_seconds() * 1000, 0.0)
    grown = max(AGE_SHARE * age_ms, SILENCE_SHARE * silence_ms, FLOOR_MS)
    return int(min(grown, ceiling_ms))


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def adapt(task: _Task, now: datetime | None = None) -> _Task:
    """``task`` with its ``pollIntervalMs`` for this moment; its stored value is the ceiling."""
    ceiling = task.poll_interval_ms
    if ceiling is None or task.status in TERMINAL_STATUSES:
        return task
    current = interval_ms(
        created_at=_parse(task.created_at),
        last_updated_at=_parse(task.last_updated_at),
        now=now or datetime.now(UTC),
        ceiling_ms=ceiling,
    )
    return task.model_copy(update={"poll_interval_ms": current})
