"""The MCP side: which requests become tasks, and how each ``tasks/*`` request is served.

Routing, task creation, MRTR-first creation, ``subscriptions/listen``, and the
errors a client sees when Temporal is busy. Built on ``tasks`` and ``core``.
"""
