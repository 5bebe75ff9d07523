"""Progress of a running leg, carried by activity heartbeats (a local leg: signals).

A leg heartbeats all the time (that is how a dead worker is detected and how
cancellation reaches a running body); the heartbeat details carry the latest
progress. ``tasks/get`` reads them from the pending activity through
``describe()``, so reporting progress writes nothing to the workflow history.
They also carry when the message last changed: the message is the working
task's ``statusMessage``, so that moment is its ``lastUpdatedAt`` (the
heartbeat's own time moves every second, changed or not).

A *local* leg runs inside its workflow task and has no heartbeat. It sends its
progress to its own workflow as signals instead (``ProgressSignals``), which the
workflow puts in its memo -- ``tasks/get`` reads it with the same ``describe``.
They are coalesced (the latest report, at most one per ``min_interval_s``), so a
tool reporting in a tight loop adds about one history event per second.

FastMCP's ``Progress`` dependency only knows Docket's execution and an
in-memory fallback; a leg's ``Progress()`` parameters report to its
``LegProgress`` through a copy of the tool made for that leg
(``progress_dependency``), nothing of FastMCP's changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from fastmcp_temporal.activities.leg_news import News
from fastmcp_temporal.timing import TICK_S
from fastmcp_temporal.workflows.models import (
    LOCAL_LEG_PROGRESS_SIGNAL,
    LocalLegProgress,
    ProgressReport,
)

logger = logging.getLogger(__name__)


class ProgressSignals:
    """A local leg's progress, sent to its own workflow as coalesced signals.

    The first report goes at once; later ones wait ``min_interval_s`` after the
    previous signal and only the newest is sent. ``close`` drops what is not
    sent yet, waits for the signal in flight and returns the highest ``seq``
    Temporal acknowledged: every signal up to it is in the workflow's history,
    so the workflow can wait for all of them before it ends the task.
    """

    def __init__(self, *, leg: str, min_interval_s: float = TICK_S) -> None:
        info = activity.info()
        self._handle = activity.client().get_workflow_handle(
            info.workflow_id, run_id=info.workflow_run_id
        )
        self.leg = leg
        self._min_interval_s = min_interval_s
        self._pending: dict[str, Any] | None = None
        self._sender: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._seq = 0
        self.acknowledged = 0

    def send(self, details: dict[str, Any]) -> None:
        if self._closing.is_set():
            return
        self._pending = details
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send_pending())

    async def _send_pending(self) -> None:
        while self._pending is not None and not self._closing.is_set():
            details, self._pending = self._pending, None
            self._seq += 1
            report = LocalLegProgress(
                leg=self.leg,
                seq=self._seq,
                message=details.get("message"),
                progress=details.get("progress"),
                total=details.get("total"),
            )
            try:
                await self._handle.signal(LOCAL_LEG_PROGRESS_SIGNAL, report)
                self.acknowledged = report.seq
            except Exception as err:  # progress is best effort; the leg goes on
                logger.warning("A local leg's progress signal failed: %s", err)
            with contextlib.suppress(TimeoutError):  # the throttle, cut short by close()
                await asyncio.wait_for(self._closing.wait(), self._min_interval_s)

    async def close(self) -> int:
        self._closing.set()
        self._pending = None
        if self._sender is not None:
            await asyncio.shield(self._sender)
        return self.acknowledged

    def abandon(self) -> None:
        """The leg did not return (cancelled, timed out): stop sending, count nothing."""
        self._closing.set()
        self._pending = None
        if self._sender is not None:
            self._sender.cancel()


class LegProgress:
    """Progress state of one leg; every change is sent as a heartbeat.

    A *local* leg (``heartbeats=False``) sends none: it runs inside its workflow
    task, Temporal has no heartbeat for it, and the SDK core refuses each one
    with a warning (``UnknownActivity``). Its changes go to ``signals`` when
    its workflow takes them, else they stay in this object.
    """

    def __init__(
        self,
        *,
        heartbeats: bool = True,
        signals: ProgressSignals | None = None,
        tell: Callable[[News], None] | None = None,
    ) -> None:
        """``tell``: the calls waiting on the leg's task in this process (``leg_news``)
        hear each report, and each log line of its ``TaskContext``."""
        self._heartbeats = heartbeats
        self.signals = signals
        self.tell = tell
        self._current: float | None = None
        self._total: float | None = None
        self._message: str | None = None
        self._message_at: datetime | None = None
        #: Which attempt of the leg reports: a retry's own reports outrank the failure
        #: Temporal keeps on the pending activity while it runs (``task_records``).
        self._attempt = activity.info().attempt if heartbeats else None

    @property
    def current(self) -> int | None:
        return None if self._current is None else int(self._current)

    @property
    def total(self) -> int:
        return int(self._total) if self._total is not None else 1

    @property
    def message(self) -> str | None:
        return self._message

    def last_report(self) -> ProgressReport | None:
        """The progress as last reported (``None`` before any number): the leg's final word."""
        if self._current is None:
            return None
        return ProgressReport(progress=self._current, total=self._total, message=self._message)

    def details(self) -> dict[str, Any]:
        return {
            "progress": self._current,
            "total": self._total,
            "message": self._message,
            "message_at": self._message_at.isoformat() if self._message_at else None,
            "attempt": self._attempt,
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
        if self.tell is not None and (report := self.last_report()) is not None:
            self.tell(report)
        if self._heartbeats:
            activity.heartbeat(self.details())
        elif self.signals is not None:
            self.signals.send(self.details())

    async def heartbeat_forever(self, interval_s: float) -> None:
        """Keep the leg alive (and cancellable) while the body runs.

        The first beat comes after one interval: a short leg is over before it
        would matter, and skipping it saves a heartbeat RPC per leg.
        """
        while self._heartbeats:
            await asyncio.sleep(interval_s)
            activity.heartbeat(self.details())


#: The progress sink of the leg running in this asyncio task (set by the leg, read
#: by its ``Progress()`` parameters: ``progress_dependency``).
current_leg_progress: ContextVar[LegProgress | None] = ContextVar(
    "fastmcp_temporal_leg_progress", default=None
)
