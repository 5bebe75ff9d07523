"""What a waiting plain call tells its client: progress, log lines, and that it still waits.

The client of a durable plain call hears what the inline call would send --
``notifications/progress`` for its ``progressToken``, ``notifications/message`` for
each log line -- from wherever the wait learns it (``call_waits``): a leg running
here, or a read of the task in Temporal. Reports are coalesced to the newest one
at most once a tick (a chatty body does not flood a crowd of streams),
the body's last report always goes before the result, and each notification's
progress is above the last one's (a report whose own number is not -- a step that
moved no number, a leg run again that counts from 1 -- goes raised just above). A
workflow tool's reports come as numbered lines from its workflow's memo: those a
read passed over are joined into the next notification, not dropped. After ``keepalive_s``
without a notification comes one that says what the task does and for how long,
its progress nudged up by ``KEEPALIVE_STEP`` above the last one sent (MCP: the
progress increases with every notification), so a host that aborts a silent tool
-- Claude Code after 300 s by default -- keeps waiting through a silent body or
a worker being replaced. Without a ``progressToken`` there is nothing to send a
report to; log lines still go, as inline.

``TICK_S`` (``fastmcp_temporal.timing``, the one clock of a task's progress) paces
the wait: it is the heartbeat throttle of the front end's worker
(``in_process_worker``): no report of a leg is fresher than that, so neither
reads nor notifications come faster.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import math
from collections.abc import Coroutine, Sequence
from typing import Any

from fastmcp.server.context import Context

from fastmcp_temporal.activities.leg_news import LogLine
from fastmcp_temporal.timing import TICK_S
from fastmcp_temporal.workflows.models import ProgressReport

logger = logging.getLogger(__name__)

#: How much a keepalive adds to the progress last sent (and a report whose own is not above it).
KEEPALIVE_STEP = 0.001
#: A workflow tool's lines in one notification, at most, and what joins them.
JOINED_LINES = 5
LINE_JOIN = " · "


def progress_token(context: Context) -> str | int | None:
    """The request's ``progressToken``: without one, an inline call sends no progress either."""
    request_context = context.request_context
    meta = request_context.meta if request_context is not None else None
    token = (meta or {}).get("progressToken")
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


class CallProgress:
    """A call's progress and log lines to its client (see the module docstring).

    Made in the request's handler, it sends in that request's context (FastMCP finds
    the request, its ``progressToken`` and its stream there), whichever task asks.
    """

    def __init__(
        self, context: Context, keepalive_s: float, *, began: float, tick_s: float = TICK_S
    ) -> None:
        """``tick_s``: the least time between two notifications (the read loop's tick)."""
        self._tick_s = tick_s
        self._context = context
        self._request = contextvars.copy_context()
        self._wanted = progress_token(context) is not None
        # Sent this much before the silence reaches ``keepalive_s``: the read loop nudges
        # once a tick, spread over the tick, so a keepalive leaves up to two ticks late.
        self._silence_s = max(keepalive_s - 2 * tick_s, tick_s)
        self._began = began
        self._lock = asyncio.Lock()
        #: The last notification, as sent (its progress raised above the one before).
        self._sent: ProgressReport | None = None
        self._sent_at = -math.inf
        #: The body's last report, as heard: a read that finds it again is no news.
        self._heard: ProgressReport | None = None
        #: Heard, not sent yet; with ``_lines``, its message is theirs, coalesced.
        self._pending: ProgressReport | None = None
        #: A workflow tool's lines not sent yet, oldest first (``_coalesced``).
        self._lines: list[str] = []
        #: The number of the newest line heard (a workflow tool's lines are numbered).
        self._line_seq = 0
        #: What the task does, in words: its body's last message, or what a read said.
        self._doing: str | None = None
        self._ticking: asyncio.Task[None] | None = None
        self._closed = False

    async def heard(
        self,
        report: ProgressReport | None,
        *,
        status: str | None = None,
        lines: Sequence[tuple[int, str]] | None = None,
    ) -> None:
        """A report of the body (or what a read of the task said, ``status``).

        ``lines``: a workflow tool's last few lines, ``(seq, message)``; those not
        heard yet are relayed, coalesced into the next notification, so a step a read
        passed over is not lost. A report whose progress is not above the last one
        sent (a step that moved no number, a retried body that counts again) still
        goes, its progress raised just above (MCP: it increases with each one).
        """
        fresh = self._fresh(lines) if lines is not None else []
        if fresh:
            self._doing = fresh[-1]
        elif report is not None and report.message:
            self._doing = report.message
        elif status:
            self._doing = status
        if not self._wanted:
            return
        if fresh:
            self._lines = [*self._lines, *fresh]
        elif report is None or report == self._heard:
            return
        self._heard = report
        self._pending = self._coalesced(report)
        await self.tick(asyncio.get_running_loop().time(), keepalive=False)

    async def line(self, line: LogLine) -> None:
        async with self._lock:
            if self._closed:  # the call has its answer: nothing goes after it
                return
            await self._in_request(
                self._context.log(line.message, line.level, line.logger_name, line.extra)
            )

    @property
    def wanted(self) -> bool:
        """The client gave a ``progressToken``: without one, no progress goes, keepalive or not."""
        return self._wanted

    def nudge(self) -> None:
        """``tick`` in a task of its own, unless the last is still sending: one client slow
        to read its stream never holds up the others'. Without a ``progressToken``, nothing."""
        if not self._wanted or self._closed:
            return
        if self._ticking is None or self._ticking.done():
            self._ticking = asyncio.create_task(self.tick(asyncio.get_running_loop().time()))

    async def close(self) -> None:
        self._closed = True
        if self._ticking is not None and not self._ticking.done():
            self._ticking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticking

    async def tick(self, now: float, *, keepalive: bool = True) -> None:
        """Send the newest report if a tick has passed since the last one; else, past
        ``keepalive_s`` of silence, a keepalive."""
        if not self._wanted or now - self._sent_at < self._tick_s:
            return
        if self._pending is not None:
            await self._send(self._pending, now, throttled=True)
        elif (
            keepalive
            and now - self._sent_at >= self._silence_s
            and now - self._began >= self._silence_s
        ):
            await self._send(self._keepalive(now), now, throttled=True)

    async def finish(self, final: ProgressReport | None) -> None:
        """Before the result: the body's last report (the task's end carries it), or the
        newest one not sent yet -- whatever the last notification was."""
        if final is not None and final != self._heard:
            self._heard = final
            self._pending = self._coalesced(final)
        if self._wanted and self._pending is not None:
            await self._send(self._pending, asyncio.get_running_loop().time())

    def heard_before(
        self, report: ProgressReport | None, lines: Sequence[tuple[int, str]] | None
    ) -> None:
        """``report`` and ``lines`` went to the client on an earlier request of this call
        (an MRTR round): not again."""
        self._heard = report
        self._fresh(lines or ())

    def _fresh(self, lines: Sequence[tuple[int, str]]) -> list[str]:
        """The lines not heard yet; a new run of the tool's workflow numbers from 1 again."""
        if not lines:
            return []
        newest = max(seq for seq, _ in lines)
        if newest < self._line_seq:
            self._line_seq = 0
        fresh = [message for seq, message in lines if seq > self._line_seq]
        self._line_seq = newest
        return fresh

    def _coalesced(self, report: ProgressReport | None) -> ProgressReport | None:
        """``report``, its message the lines not sent yet (the last ``JOINED_LINES``)."""
        if not self._lines:
            return report
        shown = self._lines[-JOINED_LINES:]
        message = ("... " if len(self._lines) > len(shown) else "") + LINE_JOIN.join(shown)
        if report is None:
            return ProgressReport(
                progress=self._sent.progress if self._sent else 0.0, message=message
            )
        return report.model_copy(update={"message": message})

    def _keepalive(self, now: float) -> ProgressReport:
        doing = self._doing or "The tool is running"
        return self._above_sent(
            ProgressReport(
                progress=0.0,
                total=self._sent.total if self._sent is not None else None,
                message=f"{doing} ({_duration(now - self._began)} since the call began)",
            )
        )

    def _above_sent(self, report: ProgressReport) -> ProgressReport:
        """``report`` with its progress above the last one sent: as it is, or that one
        up by ``KEEPALIVE_STEP`` (or the least a float can: a step too small to show on a
        huge value would not increase it); past its total, without one (no percentage
        over 100)."""
        sent = self._sent
        if sent is None or report.progress > sent.progress:
            return report
        progress = max(
            round(sent.progress + KEEPALIVE_STEP, 6), math.nextafter(sent.progress, math.inf)
        )
        total = report.total if report.total is not None and progress <= report.total else None
        return ProgressReport(progress=progress, total=total, message=report.message)

    async def _send(self, report: ProgressReport, now: float, *, throttled: bool = False) -> None:
        """``throttled``: not within a tick of the last one (checked once the lock is held,
        so that two ticks racing for it send one notification, not two)."""
        async with self._lock:
            if self._closed:
                return
            if throttled and now - self._sent_at < self._tick_s:
                return
            if report is self._pending:
                self._pending, self._lines = None, []
            sent = self._above_sent(report)
            self._sent, self._sent_at = sent, now
            await self._in_request(
                self._context.report_progress(sent.progress, sent.total, sent.message)
            )

    async def _in_request(self, sending: Coroutine[Any, Any, None]) -> None:
        """Send in the request's context; a stream that no longer carries it is no error."""
        try:
            await asyncio.create_task(sending, context=self._request)
        except Exception as err:
            logger.debug("Relaying to a waiting call failed: %s", err)


def _duration(seconds: float) -> str:
    """``45 s``, ``2 min 5 s``, ``1 h 3 min``."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"
