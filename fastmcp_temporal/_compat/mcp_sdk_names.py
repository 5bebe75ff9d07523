"""The MCP SDK's private names: whether the client itself cancelled a request.

A durable plain call tells a client's ``notifications/cancelled`` from a dropped
connection through the SDK's dispatch context, which it keeps private; with
why, when to delete it and the degraded path when it is gone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastmcp_temporal._compat.degraded import _degraded

if TYPE_CHECKING:
    from fastmcp import Context


def peer_cancelled(context: Context) -> bool:
    """Whether the client sent ``notifications/cancelled`` for this request.

    Why: a durable synchronous call must cancel its task when the client cancels
    the request, and only then -- a dropped connection (or a server shutting
    down) cancels the handler the same way but must leave the task running. The
    SDK keeps the difference in its dispatch context's ``cancel_requested``
    event, reachable only through ``ServerSession._request_outbound``. Delete when
    FastMCP's ``Context`` or the SDK's ``ServerRequestContext`` exposes
    ``cancel_requested``. Without it, a client's cancel reads as a dropped
    connection: the task goes on (a warning says so once).
    """
    request_context = context.request_context
    if request_context is None:
        return False
    outbound = getattr(request_context.session, "_request_outbound", None)
    if outbound is None:
        _degraded("ServerSession._request_outbound", "a client's cancel leaves its task running")
    event = getattr(outbound, "cancel_requested", None)
    return bool(event is not None and event.is_set())
