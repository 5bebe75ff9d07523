"""Input a tool asks for that the creating client did not declare: park, or fail.

A task's ``inputRequests`` are listed by ``tasks/get`` for whichever client of
the caller polls it, and SEP-2663 says a server MUST NOT *send* input requests
a client has not declared support for. A client that never declared
``elicitation`` (MCP Inspector, many agents) will not answer one itself, but
another client of the same caller may (a second connection, an operator's
script, a UI). So, as ``fastmcp-tasks`` and FastMCP's in-process tasks do, the
task parks in ``input_required`` with the request listed (``park``, the
default), and its ``statusMessage`` names the capability the creating client
lacks (``status_message``), so whoever polls it learns why nobody answers.

``TemporalTasks(undeclared_input="fail")`` keeps the stricter rule: such a leg
ends the task ``failed`` with ``-32021`` (Missing required client capability)
and ``data.requiredCapabilities`` naming what is missing, shaped as the spec
shapes that error for the tasks extension itself.

The capabilities are the ones captured with the task (``CallerSnapshot.
client_capabilities``); a task created before they were captured (``None``)
parks without a message.
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


def input_capabilities(capabilities: dict[str, Any]) -> dict[str, Any]:
    """Just the capabilities that answer input requests (what ``undeclared`` reads)."""
    return {name: capabilities[name] for name in _CAPABILITY_OF.values() if name in capabilities}


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


def missing_names(missing: dict[str, Any]) -> str:
    """``elicitation (url mode), sampling``: the missing capabilities, as a person reads them."""
    return ", ".join(
        f"{name} (url mode)" if "url" in detail else name for name, detail in missing.items()
    )


def status_message(missing: dict[str, Any]) -> str:
    """A parked task's ``statusMessage`` when its creating client cannot answer it."""
    return (
        f"Waiting for input the creating client did not declare support for "
        f"({missing_names(missing)}): answer with tasks/update from a client that can"
    )


def missing_capability_error(tool_name: str, missing: dict[str, Any]) -> dict[str, Any]:
    """The task's ``error``: ``-32021`` with the spec's ``data.requiredCapabilities``."""
    names = missing_names(missing)
    return {
        "code": MISSING_REQUIRED_CLIENT_CAPABILITY,
        "message": (
            f"Missing required client capability: tool {tool_name!r} asked the client for "
            f"input it did not declare support for ({names}) when it created this task"
        ),
        "data": {"requiredCapabilities": missing},
    }
