"""SIGTERM to a front end: drain the calls that wait, then exit 0.

A deploy stops a front end with SIGTERM. Left to itself, uvicorn (what
``mcp.run(transport="http")``, ``fastmcp run`` and ``uvicorn`` serve with) stops
listening, waits ``timeout_graceful_shutdown`` -- FastMCP sets 2 s -- for the
open requests, then cancels them, and re-raises the signal, which the default
action turns into death by signal. A durable plain call waits as long as its
task runs, so every call waiting then was cut: no answer, no error, though
its task went on.

So while calls wait here, SIGTERM goes to this module first
(``SigtermDrain.arm``, at each wait, in the main thread; uvicorn installs its
handler only once it serves; only the process's signal table changes, nothing of
uvicorn's). On SIGTERM it asks uvicorn to shut down with a graceful wait that
covers the grace (``_compat.shut_down_gracefully``: uvicorn's public
``timeout_graceful_shutdown``, raised for that server): uvicorn stops listening
and closes idle connections itself (new connections are refused, which is what a
load balancer moves on from) and waits for the open requests, while the waiting
calls get ``drain_grace_s`` (``call_waits.WaitingCalls.drain``: new waiting calls
get ``-32002``, those still waiting at the end are answered ``-32002`` with their
task id). A second SIGTERM ends the grace at once. Once they are answered, uvicorn
finds nothing left open; the lifespan unwinds (an in-process worker hands its
running legs back to Temporal) and the process exits 0: the shutdown was asked for
without recording the signal, so uvicorn does not re-raise it, under ``mcp.run``
and under ``uvicorn app:app`` (or ``uvicorn.run(app)``) alike. Under ``uvicorn
app:app`` the lifespan starts after uvicorn took SIGTERM, so the drain takes it at
once, not at the first wait. Another ASGI server's SIGTERM is not drained; a
warning says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from fastmcp_temporal import _compat
from fastmcp_temporal.server.protocol.call_waits import WaitingCalls

logger = logging.getLogger(__name__)

Handler = Callable[[int, FrameType | None], Any]

#: What uvicorn's graceful wait gives beyond the grace: the answers sent at its end,
#: and the rest of the open requests (FastMCP's own ``timeout_graceful_shutdown``).
AFTER_GRACE_S = 2.0


def _exit_zero(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


@contextlib.contextmanager
def exits_cleanly() -> Iterator[None]:
    """While inside, SIGTERM unwinds the server like Ctrl-C does, and the process exits 0.

    Only where the default action stood (a handler someone else installed, such
    as ``fastmcp-temporal worker``'s, is left alone), and only in the main thread.
    Unwinding matters for an in-process worker: killed by the default action it
    would abandon its running legs until their heartbeats time out.
    """
    main_thread = threading.current_thread() is threading.main_thread()
    if not main_thread or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _exit_zero)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is _exit_zero:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


class SigtermDrain:
    """Puts the drain of the waiting calls in front of the HTTP server's own SIGTERM handling."""

    def __init__(self, grace_s: float) -> None:
        self._grace_s = grace_s
        self._armed: Handler | None = None
        self._draining: asyncio.Task[None] | None = None
        self._hurry = asyncio.Event()
        self._warned = False

    def arm(self, waits: WaitingCalls) -> None:
        """Take SIGTERM from the uvicorn server now serving ``waits``' calls, if one is and
        it has it."""
        if threading.current_thread() is not threading.main_thread():
            return
        current = signal.getsignal(signal.SIGTERM)
        if current is self._armed or not callable(current):
            return
        server = _compat.uvicorn_server_of(current)
        if server is None:
            if current is not _exit_zero and not self._warned:
                self._warned = True
                logger.warning(
                    "fastmcp-temporal: SIGTERM is handled by %r, not by uvicorn: plain "
                    "calls that wait here are not drained on SIGTERM (see the sync-clients "
                    "guide, 'A front end that stops')",
                    current,
                )
            return
        loop = asyncio.get_running_loop()

        def on_sigterm(signum: int, frame: FrameType | None) -> None:
            loop.call_soon_threadsafe(self._start, waits, server, current)

        self._armed = on_sigterm
        signal.signal(signal.SIGTERM, on_sigterm)

    def _start(self, waits: WaitingCalls, server: Any, uvicorn_handler: Handler) -> None:
        if self._draining is not None:
            self._hurry.set()  # a second SIGTERM: end the grace now
            return
        if not _compat.shut_down_gracefully(server, self._grace_s + AFTER_GRACE_S):
            uvicorn_handler(signal.SIGTERM, None)  # degraded: uvicorn's own timeout applies
        self._draining = asyncio.create_task(self._drain(waits, uvicorn_handler))

    async def _drain(self, waits: WaitingCalls, uvicorn_handler: Handler) -> None:
        drain = asyncio.create_task(waits.drain(self._grace_s))
        hurry = asyncio.create_task(self._hurry.wait())
        await asyncio.wait({drain, hurry}, return_when=asyncio.FIRST_COMPLETED)
        if not drain.done():
            drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drain
            await waits.drain(0)
        hurry.cancel()
        if signal.getsignal(signal.SIGTERM) is self._armed:
            signal.signal(signal.SIGTERM, uvicorn_handler)  # a SIGTERM now: uvicorn's own
