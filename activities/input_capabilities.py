"""Asking a client for input it cannot give: fail the task at once, naming the capability.

A task's ``inputRequests`` go to the client that polls it, and CORE MRTR says a
server MUST NOT send input requests the client has not declared support for.
A client that never declared ``elicitation`` (MCP Inspector, many agents) will
never answer one: the task would sit in ``input_required`` until its TTL. So a
leg that asks for elicitation, sampling or roots the *creating* request did not
declare ends the task ``failed`` with ``-32021`` (Missing required client
capability) and ``data.requiredCapabilities`` naming what is missing, exactly as
the spec shapes that error for the tasks extension itself.

The capabilities are the ones captured with the task (``CallerSnapshot.
client_capabilities``); a task created before they were captured (``None``)
keeps the old behaviour and parks.
"""

from __future__ import annotations

from typing import Any

from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY

#: ``inputRequests`` method -> the client capability that answers it.
_CAPABILITY_OF = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


def undeclared(
    input_requests: dict[str, Any], capabilities: dict[str, Any] | None
) -> dict[str, Any]:
    """The ``requiredCapabilities`` the client lacks for these requests (empty: none)."""
    if capabilities is None:
        return {}
    missing: dict[str, Any] = {}
    for request in input_requests.values():
        capability = _CAPABILITY_OF.get(str(request.get("method")))
        if capability is None:
            continue
        declared = capabilities.get(capability)
        mode = (request.get("params") or {}).get("mode")
        if declared is None:
            missing[capability] = {"url": {}} if mode == "url" else {}
        elif capability == "elicitation" and mode == "url" and "url" not in declared:
            missing[capability] = {"url": {}}  # `{}` alone declares form mode only
    return missing


def missing_capability_error(tool_name: str, missing: dict[str, Any]) -> dict[str, Any]:
    """The task's ``error``: ``-32021`` with the spec's ``data.requiredCapabilities``."""
    names = ", ".join(
        f"{name} (url mode)" if "url" in detail else name for name, detail in missing.items()
    )
    return {
        "code": MISSING_REQUIRED_CLIENT_CAPABILITY,
        "message": (
            f"Missing required client capability: tool {tool_name!r} asked the client for "
            f"input it did not declare support for ({names}) when it created this task"
        ),
        "data": {"requiredCapabilities": missing},
    }
