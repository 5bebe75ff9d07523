"""A durable synchronous call's progress, relayed as ``notifications/progress``.

An inline call's ``report_progress`` reaches its client as
``notifications/progress`` for the request's ``progressToken``. When the same
call runs as a task, the body reports on a worker. A leg that runs in this
process (with a worker in the front end: a short tool's local legs, and the
activity legs that worker runs) hands each report to the waiting call in-process
(``activities.leg_hints``): ``HintRelay`` sends every one, as inline, and the
leg's log lines with them.
Elsewhere a report lands in one of two places, and ``relay_progress`` reads
both while the request waits:

- a leg run as an activity puts its latest ``progress`` / ``total`` /
  ``message`` in its heartbeat details (not history): read with a
  ``describe`` every ``HEARTBEAT_READ_S``, and only for a request that
  carries a ``progressToken`` (the worker sends a heartbeat at most once per
  throttle interval, so reports closer than that are coalesced anyway);
- a local leg signals its progress to its workflow (``mcp_leg_progress``),
  which is history: read from a long poll on the history's tail, as it arrives.

The body's last report may be in neither place: a heartbeat ends with its leg
(and is read only every ``HEARTBEAT_READ_S``), and a local leg drops a signal it
has not sent when it returns. The leg hands it to the task's end
(``TaskView.final_progress``), and the wait sends it once the relay has stopped
(``send_final``), before the result, as an inline call would.

Only a report whose progress is past the last one relayed goes on, in the order
it was read (MCP: the progress value increases with each notification), so the
client sees the body's reports (from Temporal: coalesced to at most about one a
second), never
out of order, and never again when a leg runs a second time (a local leg whose
workflow task timed out on a loaded worker, a leg retried after its worker was
lost) (``docs/differences.md``). A workflow tool's progress (its own memo) is not
relayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from fastmcp.server.context import Context
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.service import RPCError

from fastmcp_temporal.activities import leg_hints
from fastmcp_temporal.activities.leg_hints import LegStarted, LogLine
from fastmcp_temporal.server.core.codec import PayloadDecryptionError
from fastmcp_temporal.server.tasks.engine import TaskEngine
from fastmcp_temporal.server.tasks.task_records import describe_raw
from fastmcp_temporal.server.tasks.task_watch import HistoryTail, Tail
from fastmcp_temporal.workflows.models import (
    LOCAL_LEG_PROGRESS_SIGNAL,
    LocalLegProgress,
    ProgressReport,
)

logger = logging.getLogger(__name__)

#: ``(progress, total, message)`` as ``notifications/progress`` carries it.
Report = tuple[float, float | None, str | None]
#: Between two heartbeat reads: half the heartbeat throttle (1 s on the embedded
#: worker), so reports at least ~1.5 s apart are each seen once.
HEARTBEAT_READ_S = 0.5


def progress_token(context: Context) -> str | int | None:
    """The request's ``progressToken``: without one, an inline call sends no progress either."""
    request_context = context.request_context
    meta = request_context.meta if request_context is not None else None
    token = (meta or {}).get("progressToken")
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


@dataclass
class Relayed:
    """The last report the relay sent: the task's final one goes on only if it is newer."""

    last: Report | None = None

    def is_new(self, report: Report) -> bool:
        return self.last is None or report[0] > self.last[0]


async def relay_progress(
    engine: TaskEngine,
    workflow_id: str,
    context: Context,
    tail: Tail | None = None,
    relayed: Relayed | None = None,
) -> None:
    """Send each new report of the task's body to the client, until cancelled.

    ``tail``: the history's new events when the wait shares its long polls
    (``task_watch.SharedTail``); by default a ``HistoryTail`` of its own.
    ``relayed``: where the last report sent is kept (``send_final``).
    """
    tail = tail or HistoryTail(engine, workflow_id)
    relayed = relayed or Relayed()
    waiting: asyncio.Task[list[HistoryEvent] | None] | None = None
    try:
        while True:
            if waiting is None:
                waiting = asyncio.ensure_future(tail.next_change())
            done, _ = await asyncio.wait({waiting}, timeout=HEARTBEAT_READ_S)
            try:
                if waiting in done:
                    finished, waiting = waiting, None
                    events = finished.result()
                    if events == []:  # the run closed: the wait ends it in a moment
                        await asyncio.sleep(HEARTBEAT_READ_S)
                    reports = [await _signalled(engine, event) for event in events or []]
                else:
                    reports = [await _heartbeat(engine, workflow_id)]
            except RPCError as err:  # progress is best effort: the next read may work
                logger.debug("Reading the progress of %s failed: %s", workflow_id, err)
                await asyncio.sleep(HEARTBEAT_READ_S)
                continue
            for report in reports:
                if report is not None:
                    await _send(context, relayed, report)
    finally:
        if waiting is not None:
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError, RPCError):
                await waiting


async def send_final(context: Context, relayed: Relayed, final: ProgressReport | None) -> None:
    """The task's last report, if the relay did not send it (the relay has stopped).

    A body that reports just before it returns: the report's heartbeat ended with
    its leg, or its signal was dropped with it, so only the task's end carries it.
    Inline, it reaches the client before the result; so it does here.
    """
    if final is not None:
        await _send(context, relayed, _as_sent(final))


class HintRelay:
    """What legs running in this process tell of a task (``leg_hints``), sent to one request.

    Each log line goes as ``notifications/message`` and, when ``progress``, each
    report as ``notifications/progress``, in the order the leg made them, as the
    inline call sends them. Best effort, as all relayed progress is: a send that
    fails is skipped.
    """

    def __init__(self, workflow_id: str, context: Context, relayed: Relayed, *, progress: bool):
        self._workflow_id, self._context, self._relayed = workflow_id, context, relayed
        self._progress = progress
        #: Set once a leg of the task began in this process: what it says comes here.
        self.leg_here = asyncio.Event()
        self._hints = leg_hints.listen(workflow_id)
        self._sending = asyncio.create_task(self._send_each())

    async def finish(self) -> None:
        """Send what the legs told before now, then stop (the task has ended or asks)."""
        self._hints.put_nowait(None)
        await self._sending
        self.close()

    def close(self) -> None:
        leg_hints.stop(self._workflow_id, self._hints)
        self._sending.cancel()

    async def _send_each(self) -> None:
        while (hint := await self._hints.get()) is not None:
            try:
                if isinstance(hint, LegStarted):
                    self.leg_here.set()
                elif isinstance(hint, LogLine):
                    await self._context.log(hint.message, hint.level, hint.logger_name, hint.extra)
                elif self._progress:
                    await _send(self._context, self._relayed, _as_sent(hint))
            except Exception as err:  # the request's stream may be gone: the wait goes on
                logger.debug("Relaying a hint of %s failed: %s", self._workflow_id, err)


async def _send(context: Context, relayed: Relayed, report: Report) -> None:
    """``report`` to the client, if its progress is past the last one sent."""
    if relayed.is_new(report):
        relayed.last = report
        await context.report_progress(*report)


def _as_sent(report: ProgressReport) -> Report:
    return (report.progress, report.total, report.message)


async def _signalled(engine: TaskEngine, event: HistoryEvent) -> Report | None:
    """A local leg's progress signal among the new events."""
    if event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
        return None
    attributes = event.workflow_execution_signaled_event_attributes
    if attributes.signal_name != LOCAL_LEG_PROGRESS_SIGNAL or not attributes.input.payloads:
        return None
    try:
        (report,) = await engine.client.data_converter.decode(
            list(attributes.input.payloads)[:1], [LocalLegProgress]
        )
    except PayloadDecryptionError:
        return None
    return _report(report.progress, report.total, report.message)


async def _heartbeat(engine: TaskEngine, workflow_id: str) -> Report | None:
    """The running leg's latest progress, from its heartbeat details."""
    raw = await describe_raw(engine.client, workflow_id, timeout=engine.query_timeout)
    if raw is None or not raw.pending_activities:
        return None
    payloads = list(raw.pending_activities[0].heartbeat_details.payloads)
    if not payloads:
        return None
    try:
        (details,) = await engine.client.data_converter.decode(payloads[:1], [dict])
    except PayloadDecryptionError:
        return None
    if not isinstance(details, dict):
        return None
    return _report(details.get("progress"), details.get("total"), details.get("message"))


def _report(progress: Any, total: Any, message: Any) -> Report | None:
    if not isinstance(progress, int | float) or isinstance(progress, bool):
        return None  # a message alone: FastMCP sends none without a number either
    return (
        float(progress),
        float(total) if isinstance(total, int | float) else None,
        message if isinstance(message, str) else None,
    )
