"""Let a ``CreateTaskResult`` reach the wire intact on a modern ``tools/call``.

The MCP SDK validates core methods' results against a per-version surface whose
``tools/call`` entry admits only ``CallToolResult | InputRequiredResult``; run
through it, a flat task result would be stripped of every task field. The SDK
runner in use today already skips that sieve for extension ``resultType``
values, but the SDK offers no server-side API to *declare* a produced shape, so
while at least one ``TemporalTasks`` is running, a modern ``tools/call`` result
tagged ``resultType: "task"`` passes through unchanged and everything else is
delegated (the patch itself is ``_compat.pass_task_results_through``).

Reference-counted and inert for any result that is not a task result.
"""

from __future__ import annotations

from fastmcp_temporal import _compat

_holds = 0


def install() -> None:
    global _holds
    _holds += 1
    if _holds == 1:
        _compat.pass_task_results_through(True)


def uninstall() -> None:
    global _holds
    _holds = max(0, _holds - 1)
    if _holds == 0:
        _compat.pass_task_results_through(False)


def installed() -> bool:
    return _holds > 0
