"""A task's final ``CallToolResult`` as ``client.call_tool`` returns it, from public pieces.

``ToolTask.result()`` gets the raw MCP result from ``tasks/get``; users expect
what ``client.call_tool`` gives: FastMCP's ``CallToolResult`` whose ``.data`` is
typed by the tool's output schema. FastMCP does that in a private parser that
reads the output schemas the MCP SDK's session caches privately; this module
does the same with FastMCP's public ``Client.list_tools()`` and its public
``json_schema_to_type_adapter``, rule for rule as ``client/mixins/tools.py``
of the installed FastMCP (4.1.4 and later releases differ in one, ``_result_schema``).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import fastmcp
import mcp_types
from fastmcp.exceptions import ToolError
from fastmcp.utilities.json_schema_type import json_schema_to_type_adapter

if TYPE_CHECKING:
    from fastmcp import Client
    from fastmcp.client.client import CallToolResult as FastMCPCallToolResult

logger = logging.getLogger(__name__)

#: Output schemas by tool name, per client session (a reconnected client lists anew).
_schemas: WeakKeyDictionary[Any, dict[str, dict[str, Any] | None]] = WeakKeyDictionary()


async def output_schema(client: Client, name: str) -> dict[str, Any] | None:
    """The output schema ``name`` was listed with in this client session, else ``None``.

    Listed with the public ``client.list_tools()`` (every page) when the name is
    not known yet in this session, and every listed tool's schema kept for the
    session: at most one ``tools/list`` per tool name per session -- FastMCP's
    own ``call_tool`` and the MCP SDK's result validation also list tools when
    their (private) cache lacks the name. A tool the server does not list is
    listed for again at its next result, as FastMCP does. Unlike that cache,
    ours does not see the listings a user makes with the same client, so a
    schema the server changes mid-session is seen from the next session on.
    """
    known = _schemas.setdefault(client.session, {})
    if name not in known:
        for tool in await client.list_tools():
            known[tool.name] = tool.output_schema
    return known.get(name)


#: Whether the installed FastMCP keeps a wrapped schema's root definitions: 4.1.6 and
#: later, 4.2 too (4.1.4 does not; 4.1.5 was not published where we check). What
#: ``client.call_tool`` of the installed release does is the reference, so its rule is
#: followed; ``tests/test_compat.py`` compares the two on every line CI runs.
_KEEPS_ROOT_DEFS = tuple(int(n) for n in re.findall(r"\d+", fastmcp.__version__)[:3]) >= (4, 1, 6)


def _result_schema(schema: dict[str, Any]) -> Any:
    """A wrapped schema narrowed to ``properties.result``, as the installed FastMCP does.

    The server leaves ``$defs`` (draft-07: ``definitions``) at the root, beside
    ``properties.result``. FastMCP 4.1.6+ carries them over; 4.1.4 drops them, so a
    local ``$ref`` (a recursive type in a list, say) resolves to nothing and
    ``.data`` holds plain dicts there -- as 4.1.4's own ``call_tool`` gives.
    """
    if not _KEEPS_ROOT_DEFS:
        return schema.get("properties", {}).get("result", schema)
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    narrowed = properties.get("result")
    if isinstance(narrowed, bool):
        return narrowed
    if not isinstance(narrowed, dict):
        return schema
    keys = ("$defs", "definitions")
    carried = {key: schema[key] for key in keys if key in schema and key not in narrowed}
    return {**narrowed, **carried}


async def parse_tool_result(
    client: Client, tool_name: str, result: mcp_types.CallToolResult, *, raise_on_error: bool
) -> FastMCPCallToolResult:
    """``result`` as ``client.call_tool`` returns it: ``.data`` typed by the output schema.

    An error result raises ``ToolError`` (its first block's text if that is
    text, else a generic message) when ``raise_on_error``, and has ``.data``
    ``None`` otherwise. Structured content is unwrapped when the result's ``_meta`` or the schema
    says FastMCP wrapped it (``{"result": ...}``), then validated through the
    schema into Python types (dataclasses, models, sets, datetimes); without a
    schema ``.data`` is the content as sent. Content that does not validate, or
    a schema no type can be built from, leaves ``.data`` ``None`` and logs an
    error, as FastMCP does. Content-only results have ``.data`` ``None``.
    """
    from fastmcp.client.client import CallToolResult

    if result.is_error and raise_on_error:
        first = result.content[0] if result.content else None
        if isinstance(first, mcp_types.TextContent):
            raise ToolError(first.text)
        raise ToolError(f"Tool '{tool_name}' returned an error")
    data = None
    if result.structured_content is not None and not result.is_error:
        try:
            data = await _typed(client, tool_name, result)
        except Exception as err:
            logger.error("[%s] Error parsing structured content: %s", client.name, err)
    return CallToolResult(
        content=result.content,
        structured_content=result.structured_content,
        meta=result.meta,
        data=data,
        is_error=result.is_error,
    )


async def _typed(client: Client, tool_name: str, result: mcp_types.CallToolResult) -> Any:
    """The structured content, unwrapped and validated through the tool's output schema."""
    structured = result.structured_content or {}
    fastmcp_meta = (result.meta or {}).get("fastmcp")
    wrapped = isinstance(fastmcp_meta, dict) and bool(fastmcp_meta.get("wrap_result", False))
    schema = await output_schema(client, tool_name)
    wrapped = wrapped or bool(schema and schema.get("x-fastmcp-wrap-result"))
    content = structured.get("result") if wrapped else structured
    if not schema:
        return content
    adapter = json_schema_to_type_adapter(_result_schema(schema) if wrapped else schema)
    return adapter.validate_python(content)
