"""Every private FastMCP / MCP SDK / temporalio name this package touches, in one place.

fastmcp_temporal serves the same tasks on FastMCP 4.1.4+ and 4.2.x. Where it
needs something those libraries do not offer publicly (an underscore
attribute, a context variable, a monkeypatch), it goes through this module and
nowhere else, so a new FastMCP or SDK release is checked here, line by line.
Each touchpoint says *why* it exists and *when to delete it*; each patch also
says what it reaches (*scope*): ``route_progress_dependency`` swaps a method of
a FastMCP class for the whole process while a ``TemporalTasks`` runs in it, and
``serve_listen`` wraps one server's low-level server.

The one behaviour FastMCP changed between the two lines: on 4.1 the level a
client sets with ``logging/setLevel`` is kept per session on the server, and a
task's logging follows it; on 4.2 it is connection state, which background
work cannot reach, so upstream logs background work at the server's
``client_log_level`` default. Tasks follow upstream on each line
(``LOG_LEVEL_PER_SESSION``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Literal

import fastmcp.server.context as _fastmcp_context
import mcp_types
from fastmcp.server.dependencies import Progress
from fastmcp.server.dependencies import _background_task_headers as _bg_headers
from fastmcp.server.dependencies import _background_task_session_id as _bg_session_id
from fastmcp.server.dependencies import _is_client_tool_call as _fastmcp_is_client_tool_call
from fastmcp.server.providers.fastmcp_provider import FastMCPProviderTool
from fastmcp.tools import function_tool as _function_tool
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from temporalio import workflow

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    import mcp_types
    from fastmcp import Client, Context, FastMCP
    from fastmcp.client.client import CallToolResult as FastMCPCallToolResult
    from fastmcp.server.extensions import ServerExtension
    from fastmcp.tools.base import Tool
    from mcp.client.session import ElicitationFnT
    from pydantic import TypeAdapter

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


def restore_request_identity(
    user: AuthenticatedUser | None, headers: Mapping[str, str] | None, session_id: str | None
) -> None:
    """Install a caller's token, headers and session id for ``get_access_token()`` & co.

    Why: FastMCP reads them from the SDK's ``auth_context_var`` and its own
    ``_background_task_headers`` / ``_background_task_session_id`` context
    variables (how its Docket workers restore a caller); there is no public
    setter. Delete when FastMCP exposes a "run as this caller" API.
    """
    auth_context_var.set(user)
    _bg_headers.set(dict(headers) if headers else None)
    _bg_session_id.set(session_id)


def is_client_tool_call() -> bool:
    """Whether this ``tools/call`` is the one the client sent (not a nested call).

    Why: only FastMCP's ``_is_client_tool_call`` knows; its own task decision uses
    it. Delete when ``ServerExtension.intercept_tool_call`` is told.
    """
    return _fastmcp_is_client_tool_call()


def peer_cancelled(context: Context) -> bool:
    """Whether the client sent ``notifications/cancelled`` for this request.

    Why: a durable synchronous call must cancel its task when the client cancels
    the request, and only then -- a dropped connection (or a server shutting
    down) cancels the handler the same way but must leave the task running. The
    SDK keeps the difference in its dispatch context's ``cancel_requested``
    event, reachable only through ``ServerSession._request_outbound`` (FastMCP's
    wrapper keeps the SDK context as ``_srctx``). Delete when FastMCP's
    ``Context`` or the SDK's ``ServerRequestContext`` exposes ``cancel_requested``.
    """
    request_context = context.request_context
    if request_context is None:
        return False
    outbound = getattr(request_context._srctx.session, "_request_outbound", None)
    event = getattr(outbound, "cancel_requested", None)
    return bool(event is not None and event.is_set())


# -- argument validation, as the synchronous tools/call does it ----------------


def resolve_param_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """A tool function's resolved parameter type hints, as ``FunctionTool`` resolves them.

    Why: task creation validates arguments before anything runs, exactly as the
    synchronous call would, and FastMCP keeps its validation steps private.
    Delete when ``FunctionTool`` exposes "validate these arguments".
    """
    return _function_tool._resolve_param_hints(fn)


def validate_tool_input(adapter: TypeAdapter[Any], arguments: dict[str, Any]) -> Any:
    """Validate ``arguments`` with FastMCP's strictness setting (see ``resolve_param_hints``)."""
    strict: Literal[True] | None = _function_tool._strict_input_validation()
    return _function_tool._validate_input(adapter, arguments, strict=strict)


# -- servers, mounts, extensions ------------------------------------------------


def mounted_origin(tool: Tool) -> tuple[FastMCP, str] | None:
    """For a mounted tool: the server that defines it and its name there, else ``None``.

    Why: ``FastMCPProviderTool`` keeps both in ``_server`` / ``_original_name``;
    a leg runs the defining server's component with its error-masking policy.
    Delete when the provider tool exposes them.
    """
    if not isinstance(tool, FastMCPProviderTool):
        return None
    return tool._server, tool._original_name or tool.name


def masks_error_details(server: FastMCP) -> bool:
    """The server's ``mask_error_details`` setting (why: stored only as ``_mask_error_details``).

    Delete when FastMCP exposes it.
    """
    return bool(server._mask_error_details)


def registered_extension(server: FastMCP, identifier: str) -> ServerExtension | None:
    """The extension ``server`` registered under ``identifier``.

    Why: ``FastMCP._extensions`` is the only registry (``required_extensions()``
    lists only auto-registering ones). Delete when FastMCP has ``get_extension``.
    """
    return server._extensions.get(identifier)


def server_lifespan(server: FastMCP) -> AbstractAsyncContextManager[None]:
    """Enter ``server``'s lifespan (user lifespan + extensions) without serving MCP.

    Why: ``fastmcp-temporal worker`` runs legs, not transports, and FastMCP's
    ``_lifespan_manager`` is the only entry that is not ``run()``. Delete when
    FastMCP exposes a public lifespan context.
    """
    return server._lifespan_manager()


# -- the Progress dependency --------------------------------------------------

_progress_source: Callable[[], Any] | None = None
_original_progress_aenter: Any = None


async def _progress_aenter(self: Progress) -> Progress:
    sink = _progress_source() if _progress_source is not None else None
    if sink is None:
        return await _original_progress_aenter(self)
    instance = Progress()
    instance._impl = sink
    return instance


def route_progress_dependency(source: Callable[[], Any] | None) -> None:
    """Make FastMCP's ``Progress`` dependency use ``source()`` when it returns a sink.

    ``source`` returns a ``ProgressLike`` (or ``None``: FastMCP's own behaviour).
    ``None`` restores FastMCP's ``Progress.__aenter__``.

    Why: ``Progress`` knows only Docket executions and an in-memory fallback; a
    leg's progress must reach its heartbeats. This swaps ``Progress.__aenter__``
    and sets ``Progress._impl``. Delete when FastMCP has a progress-sink hook
    (as it has ``set_background_context_factory`` for contexts).

    Scope: the whole process, as narrow as it can be. FastMCP enters the
    ``Progress()`` default of any tool of any server through the class, and has
    no per-server or per-call hook. It is swapped in while at least one
    ``TemporalTasks`` lifespan runs in the process (``activities.progress``
    counts them) and is inert outside a leg: there ``source()`` returns
    ``None`` and FastMCP's own ``__aenter__`` runs.
    """
    global _progress_source, _original_progress_aenter
    _progress_source = source
    if source is not None and _original_progress_aenter is None:
        _original_progress_aenter = Progress.__aenter__
        Progress.__aenter__ = _progress_aenter  # type: ignore[method-assign]
    elif source is None and _original_progress_aenter is not None:
        Progress.__aenter__ = _original_progress_aenter  # type: ignore[method-assign]
        _original_progress_aenter = None


# -- temporalio ------------------------------------------------------------------


def workflow_run_signature(workflow_class: type) -> tuple[str | None, Callable[..., Any]]:
    """A ``@workflow.defn`` class's registered name (``None``: dynamic) and ``run`` method.

    Why: temporalio has no public reader of a workflow definition; its own
    worker uses ``workflow._Definition.must_from_class``. Delete when it has one.
    """
    definition = workflow._Definition.must_from_class(workflow_class)
    return definition.name, definition.run_fn


# -- the client helper -------------------------------------------------------------


async def parse_tool_result(
    client: Client, tool_name: str, result: mcp_types.CallToolResult, *, raise_on_error: bool
) -> FastMCPCallToolResult:
    """A raw ``CallToolResult`` as ``client.call_tool`` returns it (``.data`` typed).

    Why: ``Client._parse_call_tool_result`` (output schema lookup, structured
    content to ``.data``) is how FastMCP's own task handle finishes a result; it
    has no public twin. Delete when FastMCP exposes it.
    """
    return await client._parse_call_tool_result(tool_name, result, raise_on_error=raise_on_error)


def client_elicitation_callback(client: Client) -> ElicitationFnT | None:
    """The SDK-shaped elicitation callback built from ``Client(elicitation_handler=...)``.

    Why: stored only as ``Client._elicitation_callback``; a task waiting for input
    is answered by the same handler a synchronous call would use. Delete when
    FastMCP exposes it.
    """
    return client._elicitation_callback


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
# Scope: the one server given (its low-level server's handler table and
# ``get_capabilities``), for that server's life; other servers of the process
# are untouched.
def serve_listen(server: FastMCP, handler: Any) -> None:
    """Make ``handler`` the server's ``subscriptions/listen`` handler (for ``taskIds`` only)."""
    from mcp_types import SubscriptionsListenRequestParams

    low_level = server._mcp_server
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


# -- uvicorn: drain before its graceful shutdown -----------------------------


# Why: uvicorn gives no hook between SIGTERM and its graceful shutdown, whose
# timeout (FastMCP sets 2 s) cancels the requests still open: every durable plain
# call waiting then would be cut. So a front end takes SIGTERM from the handler
# uvicorn installs while it serves (``Server.handle_exit``, bound to the server),
# closes its listening sockets and idle connections as ``Server.shutdown`` would
# first do (``servers``, ``server_state.connections``, each connection's
# ``shutdown()``), drains, and only then calls that handler
# (``server.extension.drain``). Delete when uvicorn or FastMCP offers a callback
# before the graceful shutdown's grace begins.
def uvicorn_server_of(handler: Callable[..., Any]) -> Any | None:
    """The uvicorn ``Server`` whose SIGTERM handler ``handler`` is, else ``None``."""
    try:
        from uvicorn import Server
    except ImportError:  # uvicorn is FastMCP's dependency; a front end without it serves stdio
        return None
    server = getattr(handler, "__self__", None)
    if isinstance(server, Server) and getattr(handler, "__func__", None) is Server.handle_exit:
        return server
    return None


def shut_down_quietly(server: Any) -> None:
    """What uvicorn's SIGTERM handler does (``should_exit``), without recording the signal:
    uvicorn re-raises a recorded one once it has shut down, which under ``uvicorn app:app``
    (whose default action is back by then) ends the process by the signal, not 0."""
    server.should_exit = True


def stop_accepting(server: Any) -> None:
    """What uvicorn's shutdown does first: stop listening, close idle keep-alive connections
    (a busy one closes once its response is sent)."""
    for listener in server.servers:
        listener.close()
    for connection in list(server.server_state.connections):
        connection.shutdown()


__all__ = [
    "LOG_LEVEL_PER_SESSION",
    "client_elicitation_callback",
    "is_client_tool_call",
    "live_session_log_level",
    "masks_error_details",
    "mounted_origin",
    "parse_tool_result",
    "peer_cancelled",
    "registered_extension",
    "resolve_param_hints",
    "restore_request_identity",
    "route_progress_dependency",
    "serve_listen",
    "server_lifespan",
    "session_log_level",
    "shut_down_quietly",
    "stop_accepting",
    "uvicorn_server_of",
    "validate_tool_input",
    "workflow_run_signature",
]
