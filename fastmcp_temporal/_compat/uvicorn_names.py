"""uvicorn's undocumented part: ask the server behind SIGTERM to shut down, long enough to drain.

A front end's drain on SIGTERM (``server.extension.drain``) finds the uvicorn
server that serves the process and asks it to shut down gracefully; uvicorn has
no public handle or hook for either. Finding it reads no uvicorn name (the
handler in the signal table is a method of uvicorn's public ``Server``); asking
it sets ``should_exit``, which uvicorn does not document. With why, when to
delete them and the fallback when they are gone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastmcp_temporal._compat.degraded import _warn_once

# -- uvicorn: its graceful shutdown, long enough for the drain ----------------


# Why: uvicorn has no hook for "SIGTERM arrived" and no public handle on the server
# that serves the process. While it serves, its SIGTERM handler is a method bound to
# that server (its own ``handle_exit``, which this module does not name): the
# handler's ``__self__`` (Python's, not uvicorn's) is the server when it is an
# instance of uvicorn's public ``Server``. A front end puts its own handler in front
# of it (the signal table is the process's, nothing of uvicorn's is reassigned), and
# on SIGTERM asks uvicorn to shut down as its maintainers advise for a programmatic
# stop (``should_exit``, encode/uvicorn#1103, undocumented), with its public
# ``timeout_graceful_shutdown`` raised for that server to cover the drain's grace:
# uvicorn then stops listening, closes idle connections and waits for the open
# requests itself (``server.extension.drain``). Delete when uvicorn (or FastMCP's
# ``run``) offers a shutdown callback before its graceful wait. Without a ``Server``
# method in the signal table (a uvicorn that installs another kind of handler):
# SIGTERM is uvicorn's alone, the waiting calls are not drained, and the drain warns.
def uvicorn_server_of(handler: Callable[..., Any]) -> Any | None:
    """The uvicorn ``Server`` whose method ``handler`` (the SIGTERM handler) is, else ``None``."""
    try:
        from uvicorn import Server
    except ImportError:  # uvicorn is FastMCP's dependency; a front end without it serves stdio
        return None
    server = getattr(handler, "__self__", None)
    return server if isinstance(server, Server) else None


def shut_down_gracefully(server: Any, grace_s: float) -> bool:
    """Have uvicorn shut down as on SIGTERM, its graceful wait at least ``grace_s``.

    Without recording the signal: uvicorn re-raises a recorded one once it has shut
    down, which under ``uvicorn app:app`` (whose default action is back by then) ends
    the process by the signal, not 0. ``False`` (and a warning): this uvicorn has no
    ``should_exit``; the caller hands the signal to uvicorn's own handler instead.
    """
    if not isinstance(getattr(server, "should_exit", None), bool):
        _warn_once(
            "fastmcp-temporal: this uvicorn's Server has no should_exit: SIGTERM goes to "
            "uvicorn's own handler, whose graceful timeout may cut the drain's grace"
        )
        return False
    config = getattr(server, "config", None)
    timeout = getattr(config, "timeout_graceful_shutdown", None)
    if isinstance(timeout, int | float) and timeout < grace_s:
        config.timeout_graceful_shutdown = grace_s  # type: ignore[union-attr]
    server.should_exit = True
    return True
