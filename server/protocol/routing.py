"""Which requests the tasks extension takes, and the gates they pass.

``tools/call``: a tool's ``TaskConfig.mode`` and the request's own opt-in decide
whether the call becomes a task (SEP-2663 and FastMCP's peer agree on the
table in ``route_tool_call``). ``tasks/*``: every request must declare the
extension and, over HTTP, carry a routing header that names its task.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from fastmcp.exceptions import NotFoundError, ToolError
from fastmcp.server.dependencies import extract_version_spec, get_http_request
from fastmcp.server.extensions import read_client_extension_settings
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID
from fastmcp.utilities.versions import VersionSpec
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types.jsonrpc import HEADER_MISMATCH
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from fastmcp_temporal import _compat
from fastmcp_temporal.activities.tool_leg import registered_component
from fastmcp_temporal.server.core import metrics
from fastmcp_temporal.server.core.wire import missing_capability
from fastmcp_temporal.server.protocol import mrtr, sync_calls
from fastmcp_temporal.server.protocol.call_waits import WaitingCalls
from fastmcp_temporal.server.protocol.creation import create_task
from fastmcp_temporal.server.protocol.temporal_busy import temporal_busy_as_error
from fastmcp_temporal.server.temporal.workflow_tools import spec_for

if TYPE_CHECKING:
    import mcp_types
    from fastmcp.server.context import Context
    from fastmcp.server.extensions import ToolCallContinuation, ToolCallOutcome
    from fastmcp.tools.base import Tool


def check_task_request(ctx: ServerRequestContext[Any, Any], task_id: str) -> None:
    """The gates every ``tasks/*`` request passes: declared extension, matching route."""
    if read_client_extension_settings(ctx, TASKS_EXTENSION_ID) is None:
        raise missing_capability(
            f"This request targets the tasks extension ({TASKS_EXTENSION_ID}), "
            "which the client did not declare for it."
        )
    try:
        request = get_http_request()
    except RuntimeError:
        return  # not HTTP: no routing headers
    header = request.headers.get(MCP_NAME_HEADER)
    if header is not None and decode_header_value(header) != task_id:
        raise MCPError(
            code=HEADER_MISMATCH,
            message=f"{MCP_NAME_HEADER} header does not match the request's 'taskId'",
        )


async def _is_workflow_tool(context: Context, tool: Tool) -> bool:
    return spec_for(await registered_component(context.fastmcp, tool)) is not None


async def route_tool_call(
    waits: WaitingCalls,
    params: mcp_types.CallToolRequestParams,
    context: Context,
    call_next: ToolCallContinuation,
    *,
    mrtr_first_tools: Collection[str],
    mrtr_window: timedelta,
    durable_sync_calls: Callable[[str], bool],
) -> ToolCallOutcome:
    """Run this ``tools/call`` as a task, or pass it through.

    ``required`` always tasks (``-32021`` if the request did not opt in),
    ``optional`` tasks when this request opted in on the 2026-07-28 protocol,
    and otherwise runs as a task the request waits for (``sync_calls``) unless
    ``durable_sync_calls(tool)`` is off -- as does a workflow tool, ``required``
    only because it cannot run inline; ``forbidden`` never does. Only the
    tool the client named is tasked: a tool that middleware or another tool
    calls runs inline.
    """
    engine = waits.engine
    from_client = _compat.is_client_tool_call()
    version_spec = extract_version_spec(params.meta)
    version = VersionSpec(eq=version_spec) if version_spec else None
    try:
        tool = await context.fastmcp.get_tool(params.name, version)
    except NotFoundError:
        tool = None
    if tool is None or not tool.task_config.supports_tasks():
        return await call_next()

    request_context = context.request_context
    modern = (
        request_context is not None and request_context.protocol_version in MODERN_PROTOCOL_VERSIONS
    )
    opted_in = modern and context.client_extension_settings(TASKS_EXTENSION_ID) is not None
    mode = tool.task_config.mode

    if not from_client:
        if mode == "required":
            raise ToolError(
                f"Tool {tool.name!r} only runs as a background task, which the "
                "client has to request by calling it directly."
            )
        return await call_next()
    if mode == "required" and not opted_in:
        if durable_sync_calls(tool.name) and await _is_workflow_tool(context, tool):
            # ``required`` only because it cannot run inline; a durable synchronous
            # call services it without a ``CreateTaskResult``, so R4 does not apply.
            return await sync_calls.call_durably(waits, tool, params, context, call_next)
        raise missing_capability(
            f"Tool {tool.name!r} requires the tasks extension ({TASKS_EXTENSION_ID}); "
            "the client did not declare it for this request."
        )
    if not opted_in:
        if not durable_sync_calls(tool.name):
            return await call_next()
        return await sync_calls.call_durably(waits, tool, params, context, call_next)
    resumed = tool.name in mrtr_first_tools and mrtr.is_ours(context.request_state)
    measured = metrics.request("tools/call") if resumed else metrics.creating(tool.name)
    with measured, temporal_busy_as_error("tools/call"):
        if tool.name in mrtr_first_tools:
            return await mrtr.create_task_mrtr_first(
                engine, tool, params, context, window=mrtr_window
            )
        return await create_task(engine, tool, dict(params.arguments or {}), context)
