"""Progress of a running leg, carried by activity heartbeats.

A leg heartbeats all the time (that is how a dead worker is detected and how
cancellation reaches a running body); the heartbeat details carry the latest
progress. ``tasks/get`` reads them from the pending activity through
``describe()``, so reporting progress writes nothing to the workflow history.
They also carry when the message last changed: the message is the working
task's ``statusMessage``, so that moment is its ``lastUpdatedAt`` (the
heartbeat's own time moves every second, changed or not).

FastMCP's ``Progress`` dependency only knows Docket's execution and an
in-memory fallback. ``install_progress_bridge`` makes it use the running leg's
``LegProgress`` instead; the bridge is process-global, reference-counted by the
extension's lifespan, and inert outside a leg.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from fastmcp_temporal import _compat
from fastmcp_temporal.activities.task_context import current_leg_progress


class LegProgress:
    """Progress state of one leg; every change is sent as a heartbeat.

    A *local* leg (``heartbeats=False``) sends none: it runs inside its workflow
    task, Temporal has no heartbeat for it, and the SDK core refuses each one
    with a warning (``UnknownActivity``). Its progress stays in this object.
    """

    def __init__(self, *, heartbeats: bool = True) -> None:
        self._heartbeats = heartbeats
        self._current: float | None = None
        self._total: float | None = None
        self._message: str | None = None
        self._message_at: datetime | None = None

    @property
    def current(self) -> int | None:
        return None if self._current is None else int(self._current)

    @property
    def total(self) -> int:
        return int(self._total) if self._total is not None else 1

    @property
    def message(self) -> str | None:
        return self._message

    def details(self) -> dict[str, Any]:
        return {
            "progress": self._current,
            "total": self._total,
            "message": self._message,
            "message_at": self._message_at.isoformat() if self._message_at else None,
        }

    def _set_message(self, message: str | None) -> None:
        if message != self._message:
            self._message = message
            self._message_at = datetime.now(UTC)

    def report(self, *, progress: float | None, total: float | None, message: str | None) -> None:
        if progress is not None:
            self._current = progress
        if total is not None:
            self._total = total
        if message is not None:
            self._set_message(message)
        self._beat()

    # The ``ProgressLike`` protocol FastMCP's ``Progress`` dependency delegates to.
    async def set_total(self, total: int) -> None:
        if total < 1:
            raise ValueError("Total must be at least 1")
        self.report(progress=None, total=total, message=None)

    async def increment(self, amount: int = 1) -> None:
        if amount < 1:
            raise ValueError("Amount must be at least 1")
        self.report(progress=(self._current or 0) + amount, total=None, message=None)

    async def set_message(self, message: str | None) -> None:
        # ``None`` clears the message (``ProgressLike``; Docket and in-memory agree),
        # unlike ``report(message=None)``, which means "no new message".
        self._set_message(message)
        self._beat()

    def _beat(self) -> None:
        if self._heartbeats:
            activity.heartbeat(self.details())

    async def heartbeat_forever(self, interval_s: float) -> None:
        """Keep the leg alive (and cancellable) while the body runs.

        The first beat comes after one interval: a short leg is over before it
        would matter, and skipping it saves a heartbeat RPC per leg.
        """
        while self._heartbeats:
            await asyncio.sleep(interval_s)
            activity.heartbeat(self.details())


_bridge_holds = 0


def install_progress_bridge() -> None:
    """Route the ``Progress`` dependency to the running leg (refcounted)."""
    global _bridge_holds
    _bridge_holds += 1
    if _bridge_holds == 1:
        _compat.route_progress_dependency(current_leg_progress.get)


def uninstall_progress_bridge() -> None:
    global _bridge_holds
    _bridge_holds = max(0, _bridge_holds - 1)
    if _bridge_holds == 0:
        _compat.route_progress_dependency(None)
