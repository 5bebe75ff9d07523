"""The MCP side: which requests become tasks, and how each ``tasks/*`` request is served.

Routing, task creation and its guards (idempotency keys, the quota), MRTR-first
creation, the ``tasks/*`` handlers, ``subscriptions/listen``, and the errors a
client sees when Temporal is busy. Built on ``tasks`` and ``core``.
"""
