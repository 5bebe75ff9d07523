"""Temporal too slow or unreachable: a retryable JSON-RPC error, not an internal one.

Every ``tasks/*`` request is one or two Temporal calls, each bounded by the
extension's ``query_timeout`` so that a request never hangs. When Temporal is
overloaded or away, those calls fail with a gRPC status that says so
(``DEADLINE_EXCEEDED``; ``CANCELLED`` "Timeout expired" when the client's own
deadline ran out; ``UNAVAILABLE``; ``RESOURCE_EXHAUSTED`` for rate limits). That
is neither the client's fault (``-32602``) nor a bug (``-32603``), and a client
that sees "Internal server error" has no way to know that asking again is the
right thing to do. So those failures become ``-32001`` (an implementation-defined
code, SEP-2663's ``-32000..-32019`` range) with a message that says what
happened to the request and ``data.retryable`` saying whether asking again is
safe:

- ``tasks/get`` reads only: nothing changed.
- ``tasks/update`` may or may not have delivered the answers; sending them again
  is safe (the workflow ignores answers to keys it no longer waits for).
- ``tasks/cancel`` may or may not have been recorded; cancelling again is safe.
- ``tools/call`` may or may not have started the task, and only the lost answer
  could name it: asking again may start a second task, so it is not retryable.
  Except when Temporal said it could not find the namespace: a loaded Temporal
  reports a namespace lookup that timed out that way (``core.temporal_errors``),
  and it answers so before it starts anything, so calling again is safe.

``fastmcp_temporal.client`` retries the retryable ones until its own deadline.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from mcp.shared.exceptions import MCPError
from temporalio.service import RPCError, RPCStatusCode

from fastmcp_temporal.client_wire import TEMPORAL_UNAVAILABLE
from fastmcp_temporal.server.core.temporal_errors import namespace_not_found

logger = logging.getLogger(__name__)

_TRANSIENT = frozenset(
    {
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.CANCELLED,
        RPCStatusCode.UNAVAILABLE,
        RPCStatusCode.RESOURCE_EXHAUSTED,
    }
)

#: What became of the request, per method, and whether asking again is safe.
_OUTCOME: dict[str, tuple[str, bool]] = {
    "tasks/get": ("nothing changed; ask again", True),
    "tasks/update": (
        "the answers may or may not have been delivered; sending them again is safe",
        True,
    ),
    "tasks/cancel": (
        "the cancellation may or may not have been recorded; cancelling again is safe",
        True,
    ),
    "tools/call": (
        "the task may or may not have been started; calling again may start a second one",
        False,
    ),
}


def is_transient(err: RPCError) -> bool:
    """Whether ``err`` says Temporal was slow or away rather than that the call was wrong."""
    return err.status in _TRANSIENT or namespace_not_found(err)


@contextlib.contextmanager
def temporal_busy_as_error(method: str) -> Iterator[None]:
    """Turn a transient Temporal failure inside the block into ``-32001`` for ``method``."""
    try:
        yield
    except RPCError as err:
        if not is_transient(err):
            raise
        outcome, retryable = _OUTCOME[method]
        if method == "tools/call" and namespace_not_found(err):
            outcome, retryable = "no task was started; calling again is safe", True
        logger.warning("Temporal did not answer %s in time: %s", method, err.message)
        raise MCPError(
            code=TEMPORAL_UNAVAILABLE,
            message=f"Temporal did not answer in time ({err.message}): {outcome}",
            data={"retryable": retryable},
        ) from None
