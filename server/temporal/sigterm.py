"""SIGTERM unwinds the server like Ctrl-C does, so the in-process worker drains.

Python's default SIGTERM action ends the process on the spot. Under
``mcp.run(transport="http")`` that happens *after* uvicorn's own shutdown --
uvicorn catches the signal, stops serving, restores the previous handler and
raises the signal again -- but *before* FastMCP's lifespan unwinds, so the
in-process Temporal worker never shuts down: a running leg is abandoned and
Temporal retries it only when its heartbeat times out (measured: 13 s later).

Raised as ``SystemExit`` instead, the signal unwinds the lifespan: the worker
stops polling, running legs get its graceful-shutdown window, and whatever is
still running is handed back to Temporal at once. A SIGTERM handler someone
else installed (``fastmcp-temporal worker`` installs its own) is left alone.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While inside, SIGTERM raises ``SystemExit`` (only where the default action stood)."""
    main_thread = threading.current_thread() is threading.main_thread()
    if not main_thread or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is _exit_on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
