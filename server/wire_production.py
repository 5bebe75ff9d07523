"""Let a ``CreateTaskResult`` reach the wire intact on a modern ``tools/call``.

The MCP SDK validates core methods' results against a per-version surface whose
``tools/call`` entry admits only ``CallToolResult | InputRequiredResult``; run
through it, a flat task result would be stripped of every task field. The SDK
runner in use today already skips that sieve for extension ``resultType``
values, but the SDK offers no server-side API to *declare* a produced shape, so
this module owns the step: while at least one ``TemporalTasks`` is running,
``serialize_server_result`` passes a modern ``tools/call`` result tagged
``resultType: "task"`` through unchanged and delegates everything else.

Reference-counted and inert for any result that is not a task result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types.methods as _methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

_original: Any = None
_holds = 0


def _serialize(method: str, version: str, data: Mapping[str, Any], **kwargs: Any) -> dict[str, Any]:
    if (
        not kwargs
        and method == "tools/call"
        and version in MODERN_PROTOCOL_VERSIONS
        and data.get("resultType") == "task"
    ):
        return dict(data)
    return _original(method, version, data, **kwargs)


def install() -> None:
    global _original, _holds
    _holds += 1
    if _original is None:
        _original = _methods.serialize_server_result
        _methods.serialize_server_result = _serialize  # type: ignore[assignment]


def uninstall() -> None:
    global _original, _holds
    _holds = max(0, _holds - 1)
    if _holds == 0 and _original is not None:
        _methods.serialize_server_result = _original
        _original = None


def installed() -> bool:
    return _original is not None
