"""Serving ``subscriptions/listen`` from an extension: the one private reach it needs.

Why: FastMCP constructs its low-level server without a ``subscriptions/listen``
handler and offers no public way to add one -- ``MethodBinding`` refuses spec
methods by design, and FastMCP exposes no ``SubscriptionBus``. The SDK's
low-level ``Server.add_request_handler`` is public; only the way to FastMCP's
low-level server (``FastMCP._mcp_server``) is not.

Delete when FastMCP serves ``subscriptions/listen`` itself with a pluggable
handler or lets an extension contribute events (``taskIds``) to its stream.
"""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP
from mcp_types import SubscriptionsListenRequestParams


def serve_listen(server: FastMCP, handler: Any) -> None:
    """Make ``handler`` the server's ``subscriptions/listen`` handler."""
    server._mcp_server.add_request_handler(
        "subscriptions/listen", SubscriptionsListenRequestParams, handler
    )
