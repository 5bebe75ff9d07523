"""The ``Context`` a tool body sees inside a task leg.

A leg runs on a worker, long after (and maybe far from) the ``tools/call`` that
created the task. There is no live session and no request, so the foreground
``Context`` would fail at the first log line. ``TaskContext`` keeps the same
surface and answers from what the task captured at creation:

- ``task_id`` / ``is_background_task`` identify the task; ``request_context`` is
  ``None`` and ``session`` raises, because there is no request;
- ``report_progress`` (and the ``Progress`` dependency) heartbeat the activity,
  which is how ``tasks/get`` reports ``statusMessage`` while a leg runs;
- logging goes to the server log (SEP-2663 sends no ``notifications/message``
  for tasks), gated as FastMCP gates background work: by the submitting
  session's ``logging/setLevel`` on FastMCP 4.1, by the server's
  ``client_log_level`` on 4.2 (where that level is connection state); a durable
  synchronous call waiting in this process also sends it to its client;
- ``client_supports_extension`` answers from the capabilities the client
  declared on the creating request;
- ``input_responses`` / ``request_state`` carry the previous round's answers.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fastmcp.server.context import Context

from fastmcp_temporal import _compat
from fastmcp_temporal.activities.leg_news import LogLine
from fastmcp_temporal.workflows.models import CallerSnapshot

if TYPE_CHECKING:
    import mcp_types
    from fastmcp import FastMCP

    from fastmcp_temporal.activities.progress import LegProgress

_logger = logging.getLogger("fastmcp_temporal.task")

_LEVEL_SEVERITY = {
    "debug": 0,
    "info": 1,
    "notice": 2,
    "warning": 3,
    "error": 4,
    "critical": 5,
    "alert": 6,
    "emergency": 7,
}
_PYTHON_LEVEL = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class TaskContext(Context):
    """A FastMCP ``Context`` for one leg of a Temporal-backed task."""

    def __init__(
        self,
        fastmcp: FastMCP,
        *,
        task_id: str,
        caller: CallerSnapshot,
        progress: LegProgress,
        input_responses: mcp_types.InputResponses | None = None,
        request_state: str | None = None,
        level_server: FastMCP | None = None,
    ) -> None:
        super().__init__(fastmcp, task_id=task_id, origin_request_id=caller.origin_request_id)
        self._caller = caller
        # The server the client talks to, where ``logging/setLevel`` is stored.
        # For a mounted tool ``fastmcp`` is the child, which never sees it.
        self._level_server = weakref.ref(level_server) if level_server is not None else None
        self._progress = progress
        self._task_input_responses = input_responses
        self._task_request_state = request_state

    @property
    def session_id(self) -> str:
        """The creating request's session id: session-scoped state (``get_state`` /
        ``set_state``) keeps working in a leg, keyed to the client that created it
        (answered here, as FastMCP's own property would from its private context
        variable, which a tool this one calls in turn still reads)."""
        if self._caller.session_id is None:
            raise RuntimeError(
                "session_id is not available because no session exists. "
                "This typically means you're outside a request context."
            )
        return self._caller.session_id

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Record progress on the task; ``tasks/get`` shows ``message`` as ``statusMessage``."""
        self._progress.report(progress=progress, total=total, message=message)

    async def log(
        self,
        message: str,
        level: Any = None,
        logger_name: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Log from a task, written server-side, gated as FastMCP gates background work.

        A synchronous call waiting in this process for the task relays the line to
        its client, as the inline call would have sent it (``leg_news``).
        """
        level = level or "info"
        if _LEVEL_SEVERITY.get(level, 1) < _LEVEL_SEVERITY.get(self._minimum_log_level(), 0):
            return
        if (tell := self._progress.tell) is not None:
            tell(LogLine(message, level, logger_name, extra))
        _logger.log(
            _PYTHON_LEVEL.get(level, logging.INFO),
            "task %s%s: %s",
            self.task_id,
            f" ({logger_name})" if logger_name else "",
            message,
            extra={"mcp_task_extra": dict(extra)} if extra else None,
        )

    def _minimum_log_level(self) -> str:
        server = (self._level_server and self._level_server()) or self.fastmcp
        if _compat.LOG_LEVEL_PER_SESSION:
            caller = self._caller
            live = _compat.live_session_log_level(server, caller.log_level_key)
            if live is not None:
                return live
            if caller.log_level is not None:
                return caller.log_level
        return server.client_log_level or "debug"

    def client_supports_extension(self, extension_id: str) -> bool:
        """Whether the client declared ``extension_id`` on the request that created the task."""
        return extension_id in self._caller.client_extensions
