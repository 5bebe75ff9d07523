"""A durable synchronous call's questions on 2025-11-25: live requests on the open call.

The handshake-era wire has no MRTR result, but it has what an inline
``ctx.elicit()`` uses: server-to-client requests over the request that is open.
So when the task a 2025-11-25 call waits for asks, and the client declared what
the question needs (``elicitation``, ``sampling``, ``roots``), each of its input
requests goes to the client as that request (``elicitation/create``,
``sampling/createMessage``, ``roots/list``), and the answers are delivered to the
task exactly as ``tasks/update`` would deliver them; the call then waits again.
One workflow serves the whole exchange, each leg runs once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types
from fastmcp.server.context import Context
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, TypeAdapter

from fastmcp_temporal.activities.input_capabilities import undeclared
from fastmcp_temporal.server.protocol.creation import declared_capabilities

_INPUT_REQUEST = TypeAdapter(mcp_types.InputRequest)
_RESULT_FOR_METHOD: dict[str, type[BaseModel]] = {
    "elicitation/create": mcp_types.ElicitResult,
    "sampling/createMessage": mcp_types.CreateMessageResult,
    "roots/list": mcp_types.ListRootsResult,
}


def can_ask_live(context: Context, input_requests: Mapping[str, Any]) -> bool:
    """A handshake-era call whose client declared everything these questions need."""
    request_context = context.request_context
    if request_context is None or request_context.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return False
    if any(
        str(request.get("method")) not in _RESULT_FOR_METHOD for request in input_requests.values()
    ):
        return False
    return not undeclared(dict(input_requests), declared_capabilities(context))


async def ask_live(context: Context, input_requests: Mapping[str, Any]) -> dict[str, Any]:
    """Send each question to the client on the open request; its answers, by key."""
    related = ServerMessageMetadata(related_request_id=context.request_id)
    answers: dict[str, Any] = {}
    for key, raw in input_requests.items():
        request = _INPUT_REQUEST.validate_python(raw)
        result = await context.session.send_request(
            request,  # type: ignore[arg-type]
            _RESULT_FOR_METHOD[request.method],
            metadata=related,
        )
        answers[key] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return answers
