"""Every private FastMCP / MCP SDK / temporalio / uvicorn name this project touches, in one place.

fastmcp_temporal serves the same tasks on FastMCP 4.1.4+ and 4.2.x. Where it
needs something those libraries do not offer publicly (an underscore
attribute, a context variable), it goes through this package and nowhere else,
one module per library (``fastmcp_names``, ``mcp_sdk_names``, ``temporalio_names``,
``uvicorn_names``; their shared degraded path in ``degraded``), so a new release
is checked here, line by line (``pyproject.toml`` bounds each library to what
CI tests; docs/reference/compatibility.md lists every name). Callers use the
names this package re-exports (``_compat.name``), never a module of it.
Each touchpoint says *why* it exists, *when to delete it* and what happens
*without it*: none is imported at module load, so a release that moves one
still imports this package, and the first use says once, in a warning, what
stops working. Nothing of theirs is reassigned for the whole process;
``serve_listen`` wraps one server's low-level server.

The one behaviour FastMCP changed between the two lines: on 4.1 the level a
client sets with ``logging/setLevel`` is kept per session on the server, and a
task's logging follows it; on 4.2 it is connection state, which background
work cannot reach, so upstream logs background work at the server's
``client_log_level`` default. Tasks follow upstream on each line
(``LOG_LEVEL_PER_SESSION``).
"""

from __future__ import annotations

from fastmcp_temporal._compat.fastmcp_names import (
    LOG_LEVEL_PER_SESSION,
    is_client_tool_call,
    live_session_log_level,
    masks_error_details,
    mounted_origin,
    restore_request_identity,
    serve_listen,
    session_log_level,
)
from fastmcp_temporal._compat.mcp_sdk_names import peer_cancelled
from fastmcp_temporal._compat.temporalio_names import workflow_run_signature
from fastmcp_temporal._compat.uvicorn_names import shut_down_gracefully, uvicorn_server_of

__all__ = [
    "LOG_LEVEL_PER_SESSION",
    "is_client_tool_call",
    "live_session_log_level",
    "masks_error_details",
    "mounted_origin",
    "peer_cancelled",
    "restore_request_identity",
    "serve_listen",
    "session_log_level",
    "shut_down_gracefully",
    "uvicorn_server_of",
    "workflow_run_signature",
]
