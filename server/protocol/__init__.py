"""The MCP side: which requests become tasks, and how each ``tasks/*`` request is served.

Routing, task creation and its guards (idempotency keys, the quota), MRTR-first
creation, the ``tasks/*`` handlers, ``subscriptions/listen``, the errors a
client sees when Temporal is busy, and 2025-xx sessions any front end serves.
Built on ``tasks`` and ``core``.
"""
