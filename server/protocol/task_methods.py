"""The ``tasks/get|update|cancel`` methods: each one request checked, then one engine call.

The extension only binds them (``TemporalTasks.methods``); what each does is here,
beside the routing whose checks they share. Every method is counted in the
metrics, and a Temporal too busy to answer within ``query_timeout`` becomes the
retryable ``-32001`` (``temporal_busy``), never an internal error. The engine
is looked up per request: it exists only while the extension's lifespan runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fastmcp.server.extensions import MethodBinding
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from fastmcp_temporal.server.core import metrics
from fastmcp_temporal.server.core.scope import task_scope
from fastmcp_temporal.server.core.wire import (
    AckResult,
    GetTaskResult,
    TaskIdParams,
    UpdateTaskParams,
)
from fastmcp_temporal.server.protocol import routing
from fastmcp_temporal.server.protocol.temporal_busy import temporal_busy_as_error
from fastmcp_temporal.server.tasks.engine import TaskEngine

#: The methods exist from the protocol version that has the tasks extension on.
_TASK_METHOD_VERSIONS = frozenset(MODERN_PROTOCOL_VERSIONS)


class TaskMethods:
    """The three ``tasks/*`` handlers, against whichever engine is running."""

    def __init__(self, engine: Callable[[], TaskEngine]) -> None:
        self._engine = engine

    def bindings(self) -> Sequence[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskIdParams, self.get, _TASK_METHOD_VERSIONS),
            MethodBinding("tasks/update", UpdateTaskParams, self.update, _TASK_METHOD_VERSIONS),
            MethodBinding("tasks/cancel", TaskIdParams, self.cancel, _TASK_METHOD_VERSIONS),
        ]

    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> GetTaskResult:
        with metrics.request("tasks/get"), temporal_busy_as_error("tasks/get"):
            routing.check_task_request(ctx, params.task_id)
            return await self._engine().get(params.task_id, task_scope())

    async def update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams
    ) -> AckResult:
        with metrics.request("tasks/update"), temporal_busy_as_error("tasks/update"):
            routing.check_task_request(ctx, params.task_id)
            await self._engine().update(params.task_id, task_scope(), params.input_responses)
        return AckResult()

    async def cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> AckResult:
        with metrics.request("tasks/cancel"), temporal_busy_as_error("tasks/cancel"):
            routing.check_task_request(ctx, params.task_id)
            await self._engine().cancel(params.task_id, task_scope())
        return AckResult()
