"""uvicorn's undocumented parts: its server behind SIGTERM, shut down long enough for the drain.

A front end's drain on SIGTERM (``server.extension.drain``) finds the uvicorn
server that serves the process and asks it to shut down gracefully; uvicorn has
no public handle or hook for either. With why, when to delete them and the
fallback when they are gone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastmcp_temporal._compat.degraded import _warn_once

# -- uvicorn: its graceful shutdown, long enough for the drain ----------------


# Why: uvicorn has no hook for "SIGTERM arrived" and no public handle on the server
# that serves the process; its SIGTERM handler is ``Server.handle_exit``, bound to
# that server, in the signal table while it serves. A front end puts its own
# handler in front of it (the signal table is the process's, nothing of uvicorn's is
# reassigned), and on SIGTERM asks uvicorn to shut down as its maintainers advise
# for a programmatic stop (``should_exit``, encode/uvicorn#1103), with its public
# ``timeout_graceful_shutdown`` raised for that server to cover the drain's grace:
# uvicorn then stops listening, closes idle connections and waits for the open
# requests itself (``server.extension.drain``). Delete when uvicorn (or FastMCP's
# ``run``) offers a shutdown callback before its graceful wait.
def uvicorn_server_of(handler: Callable[..., Any]) -> Any | None:
    """The uvicorn ``Server`` whose SIGTERM handler ``handler`` is, else ``None``."""
    try:
        from uvicorn import Server
    except ImportError:  # uvicorn is FastMCP's dependency; a front end without it serves stdio
        return None
    server = getattr(handler, "__self__", None)
    if isinstance(server, Server) and getattr(handler, "__func__", None) is getattr(
        Server, "handle_exit", object()
    ):
        return server
    return None


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
