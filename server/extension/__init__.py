"""The extension: ``TemporalTasks`` wires the parts below it into FastMCP.

``temporal_tasks`` is the class users configure and add to a server;
``options`` checks its arguments once into a frozen value; ``lifespan`` is
what it runs while the server runs (Temporal, the engine, the worker).
"""

from fastmcp_temporal.server.extension.temporal_tasks import TemporalTasks

__all__ = ["TemporalTasks"]
