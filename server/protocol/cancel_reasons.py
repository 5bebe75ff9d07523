"""The ``reason`` of a ``notifications/cancelled``, for the plain call it cancels.

The SDK applies a client's cancel by cancelling the request's handler; the
notification's ``reason`` -- which tells a host's timeout from a person's
decision (``peer_cancels``) -- goes on to the server's notification handling,
where FastMCP's middleware sees every notification (``Middleware.on_notification``,
with the raw params). So ``CancelReasons``, added to the server's middleware while
the extension runs, hands each waiting call the reason of the cancel aimed at it:
the call says which request it is (``expecting``: its connection's
``Context.session_id`` and its request id), the cancel resolves it. Only calls
that wait are remembered, and each only while it waits.

A cancel whose reason does not arrive within ``REASON_WAIT_S`` counts as one
without a reason (a person's): e.g. a server mounted into another one, whose
notifications only the parent's middleware sees. That is the behaviour from
before reasons were read: the task is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

from fastmcp.server.context import Context
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext

CANCELLED = "notifications/cancelled"
#: How long a cancelled call waits for its notification's reason (it follows the
#: handler's cancellation within a turn of the event loop; this is the bound).
REASON_WAIT_S = 1.0


class CancelReason:
    """The reason of the cancel one waiting call may receive."""

    def __init__(self, future: asyncio.Future[str | None] | None) -> None:
        self._future = future

    async def reason(self) -> str | None:
        """The cancel's reason (``None``: it gave none, or it was not seen in time)."""
        if self._future is None:
            return None
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(asyncio.shield(self._future), REASON_WAIT_S)
        return None


class CancelReasons(Middleware):
    """FastMCP middleware: each ``notifications/cancelled``'s reason, to the call it names."""

    def __init__(self) -> None:
        self._expected: dict[tuple[str, str], asyncio.Future[str | None]] = {}

    @contextlib.contextmanager
    def expecting(self, context: Context) -> Iterator[CancelReason]:
        """While inside, a cancel of this request resolves the yielded reason."""
        key = _request_key(context)
        if key is None:
            yield CancelReason(None)
            return
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._expected[key] = future
        try:
            yield CancelReason(future)
        finally:
            if self._expected.get(key) is future:
                del self._expected[key]

    async def on_notification(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if context.method == CANCELLED and context.fastmcp_context is not None:
            params = context.message if isinstance(context.message, dict) else {}
            session = _session_id(context.fastmcp_context)
            request_id = params.get("requestId")
            future = self._expected.get((session, str(request_id))) if session else None
            if future is not None and not future.done():
                reason = params.get("reason")
                future.set_result(reason if isinstance(reason, str) else None)
        return await call_next(context)


def _request_key(context: Context) -> tuple[str, str] | None:
    request_context = context.request_context
    session = _session_id(context)
    if request_context is None or session is None or request_context.request_id is None:
        return None
    return session, str(request_context.request_id)


def _session_id(context: Context) -> str | None:
    try:
        return context.session_id
    except RuntimeError:
        return None
