"""FastMCP's private names: the caller restored in a leg, mounts, masking, listen.

Every private FastMCP name fastmcp_temporal touches (and the MCP SDK's
``auth_context_var``, set beside FastMCP's own caller variables), each with why,
when to delete it and its degraded path; the package's docstring (``_compat``)
says why they are all here. The names read at module load are looked up, not
imported: a release without one still imports, and says once what stops working.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import fastmcp.server.context as _fastmcp_context
import fastmcp.server.dependencies as _fastmcp_dependencies
import mcp_types
from fastmcp.server.providers.fastmcp_provider import FastMCPProviderTool
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from fastmcp_temporal._compat.degraded import _degraded

if TYPE_CHECKING:
    from fastmcp import Context, FastMCP
    from fastmcp.tools.base import Tool

# -- logging/setLevel ---------------------------------------------------------

# Why: FastMCP 4.1 keys a session's level by ``_log_level_session_key`` in
# ``FastMCP._client_log_levels`` and offers no public reader; 4.2 removed both.
# Delete when 4.1 support ends (4.2 needs nothing: background work follows the
# server default there).
_log_level_session_key: Callable[[Any], str] | None = getattr(
    _fastmcp_context, "_log_level_session_key", None
)

#: True on FastMCP 4.1 (the level a client set follows its tasks), False on 4.2+.
LOG_LEVEL_PER_SESSION = _log_level_session_key is not None


def session_log_level(context: Context) -> tuple[str | None, str | None]:
    """The creating session's ``logging/setLevel`` key and level (4.1), else ``(None, None)``."""
    if _log_level_session_key is None:
        return None, None
    try:
        key = _log_level_session_key(context.session)
    except RuntimeError:  # no session (e.g. a call with no live request)
        return None, None
    return key, context.fastmcp._client_log_levels.get(key)


def live_session_log_level(server: FastMCP, key: str | None) -> str | None:
    """The level the session ``key`` has set *now* (4.1: it may change while a task runs)."""
    if _log_level_session_key is None or key is None:
        return None
    return server._client_log_levels.get(key)


# -- the creating caller, restored in a leg ------------------------------------


# Looked up, not imported: a FastMCP without one of them still imports this
# package, and says once what stops working (``_degraded``).
_bg_headers: Any = getattr(_fastmcp_dependencies, "_background_task_headers", None)
_bg_session_id: Any = getattr(_fastmcp_dependencies, "_background_task_session_id", None)
_fastmcp_is_client_tool_call: Callable[[], bool] | None = getattr(
    _fastmcp_dependencies, "_is_client_tool_call", None
)


def restore_request_identity(
    user: AuthenticatedUser | None, headers: Mapping[str, str] | None, session_id: str | None
) -> None:
    """Install a caller's token, headers and session id for ``get_access_token()`` & co.

    Why: FastMCP reads them from the SDK's ``auth_context_var`` and its own
    ``_background_task_headers`` / ``_background_task_session_id`` context
    variables (how its Docket workers restore a caller); there is no public
    setter. Delete when FastMCP exposes a "run as this caller" API. Without
    ``_background_task_headers``, ``get_http_headers()`` in a task returns ``{}``;
    without ``_background_task_session_id``, the task's own ``Context`` still
    answers ``session_id`` (``TaskContext`` does), a tool it calls in turn does
    not (a warning says so once).
    """
    auth_context_var.set(user)
    if _bg_headers is not None:
        _bg_headers.set(dict(headers) if headers else None)
    elif headers:
        _degraded("_background_task_headers", "get_http_headers() in a task returns {}")
    if _bg_session_id is not None:
        _bg_session_id.set(session_id)
    elif session_id is not None:
        _degraded(
            "_background_task_session_id",
            "session_id raises in a tool that a task's tool calls in turn",
        )


def is_client_tool_call() -> bool:
    """Whether this ``tools/call`` is the one the client sent (not a nested call).

    Why: only FastMCP's ``_is_client_tool_call`` knows; its own task decision uses
    it. Delete when ``ServerExtension.intercept_tool_call`` is told. Without it every
    dispatch counts as the client's: a tool that middleware or a tool body calls by
    name runs as a task too (a warning says so once).
    """
    if _fastmcp_is_client_tool_call is None:
        _degraded("_is_client_tool_call", "tools called by other tools run as tasks too")
        return True
    return _fastmcp_is_client_tool_call()


# -- servers, mounts, extensions ------------------------------------------------


def mounted_origin(tool: Tool) -> tuple[FastMCP, str] | None:
    """For a mounted tool: the server that defines it and its name there, else ``None``.

    Why: ``FastMCPProviderTool`` keeps both in ``_server`` / ``_original_name``;
    a leg runs the defining server's component with its error-masking policy.
    Delete when the provider tool exposes them. Without ``_server``: the leg runs
    as the mounting server's (its masking, its name for the tool; a warning says so
    once).
    """
    if not isinstance(tool, FastMCPProviderTool):
        return None
    server = getattr(tool, "_server", None)
    if server is None:
        _degraded(
            "FastMCPProviderTool._server",
            "a mounted tool's task errors follow the mounting server's masking and name",
        )
        return None
    return server, getattr(tool, "_original_name", None) or tool.name


def masks_error_details(server: FastMCP) -> bool:
    """The server's ``mask_error_details`` setting (why: stored only as ``_mask_error_details``).

    Delete when FastMCP exposes it. Without it: the process-wide default,
    ``fastmcp.settings.mask_error_details`` (a server's own setting is not seen).
    """
    masks = getattr(server, "_mask_error_details", None)
    if masks is None:
        _degraded("FastMCP._mask_error_details", "task errors follow fastmcp.settings")
        import fastmcp

        return bool(fastmcp.settings.mask_error_details)
    return bool(masks)


# -- subscriptions/listen ---------------------------------------------------------


# Why: FastMCP builds its low-level server without a ``subscriptions/listen``
# handler and offers no public way to add one -- ``MethodBinding`` refuses spec
# methods by design, and FastMCP exposes no ``SubscriptionBus``. The SDK's
# low-level ``Server.add_request_handler`` is public; only the way to FastMCP's
# low-level server (``FastMCP._mcp_server``) is not. Registering the handler
# also makes the SDK advertise ``listChanged`` (tools, prompts, resources) and
# ``resources.subscribe`` on the 2026-07-28 era, because it derives them from
# "listen is served" -- but FastMCP publishes none of those events there and
# our handler acknowledges only ``taskIds``. So the low-level server's
# ``get_capabilities`` is wrapped to advertise exactly what it would without
# our handler (all four off on that era; other eras are untouched).
# Delete when FastMCP serves ``subscriptions/listen`` itself with a pluggable
# handler or lets an extension contribute events (``taskIds``) to its stream.
# Without ``_mcp_server``: listen is not served (clients poll ``tasks/get``), a
# warning says so once.
# Scope: the one server given (its low-level server's handler table and
# ``get_capabilities``), for that server's life; other servers of the process
# are untouched.
def serve_listen(server: FastMCP, handler: Any) -> None:
    """Make ``handler`` the server's ``subscriptions/listen`` handler (for ``taskIds`` only)."""
    from mcp_types import SubscriptionsListenRequestParams

    low_level = getattr(server, "_mcp_server", None)
    if low_level is None:
        _degraded(
            "FastMCP._mcp_server",
            "subscriptions/listen is not served (clients poll tasks/get for task status)",
        )
        return
    low_level.add_request_handler("subscriptions/listen", SubscriptionsListenRequestParams, handler)
    if getattr(low_level, "_fastmcp_temporal_honest_capabilities", False):
        return
    advertised = low_level.get_capabilities

    def get_capabilities(*args: Any, **kwargs: Any) -> mcp_types.ServerCapabilities:
        capabilities = advertised(*args, **kwargs)
        if kwargs.get("protocol_version") not in MODERN_PROTOCOL_VERSIONS:
            return capabilities
        update: dict[str, Any] = {}
        for name in ("tools", "prompts", "resources"):
            part = getattr(capabilities, name)
            if part is not None:
                changes = {"list_changed": False}
                if name == "resources":
                    changes["subscribe"] = False
                update[name] = part.model_copy(update=changes)
        return capabilities.model_copy(update=update)

    low_level.get_capabilities = get_capabilities  # type: ignore[method-assign]
    low_level._fastmcp_temporal_honest_capabilities = True  # type: ignore[attr-defined]
