"""2025-xx MCP sessions any front end serves: the session id carries the session.

On the handshake-era wire (``initialize``, protocol 2025-03-26 to 2025-11-25, as
Codex speaks it) a client sends the id ``initialize`` gave it (``Mcp-Session-Id``)
with every later request. The MCP SDK keeps the session in the memory of the
process that answered ``initialize``, so behind a load balancer the next request,
on another front end, got ``404 Session not found`` -- and so did every session of
a front end a deploy stopped. The MCP Python client does not start over after that
404: its session stays broken.

Here the id *is* the session: the ``initialize`` params the client sent (protocol
version, capabilities, client info) and the version the SDK negotiated for them,
sealed (``session_seal``: AES-256-GCM under a key every front end derives from the
scope secret, bound to the caller's principal and to when it was issued and the age
limit it was minted under, both in clear). A front end that gets an id it does
not serve opens it and rebuilds the session by replaying that ``initialize`` and
``notifications/initialized`` through the SDK's own handshake, so the session
negotiates there what it negotiated where it began, and FastMCP's ``on_initialize``
middleware runs for it there too. An id that is forged, altered, sealed under
another secret or sent by another caller opens to nothing: an unknown session,
``404``, as before; each request checks it, also on the front end that serves it.
So does an id past the ``session_max_age_s`` of the front end that minted it (no id
lives for ever: an anonymous caller's is a bearer token), one logged out by
``DELETE`` on any front end, one a front end would negotiate another protocol
version for (replicas of different SDKs mid-upgrade: the client initializes again),
and one spelled any way but the one it was minted in. Whatever the id, checking it
costs bounded work, and a repeated one a cache lookup (``session_seal``). No store: a
random nonce makes every id unique (FastMCP keys session state by it).

What an id cannot carry, because it happens after ``initialize`` or lives in one
process:

- a request in flight: its answer is an HTTP response of the front end serving it;
- the answer to a server-to-client request (a question a 2025-xx call asks live:
  elicitation, sampling, roots) is read only by the front end that asked: route a
  session's requests to one front end (by ``Mcp-Session-Id``) when tools ask;
- notifications outside a request go to the GET stream the sending front end holds;
- ``logging/setLevel`` holds on the front end that received it; elsewhere the
  server's ``client_log_level`` applies;
- FastMCP's session state (``ctx.set_state``) is in the server's state store, per
  process unless that store is shared; ``Last-Event-ID`` resumes only where the
  events were stored;
- ``notifications/cancelled`` for a request reaches only the front end holding that
  request: route by ``Mcp-Session-Id`` where clients cancel (Codex does, at its
  ``tool_timeout_sec``);

Subscriptions need nothing: FastMCP serves no ``resources/subscribe``, and
``subscriptions/listen`` (2026-07-28) is a request of its own, without a session.

Without a scope secret (a Temporal address and no ``FASTMCP_TEMPORAL_SCOPE_SECRET``)
the key is this process's own: a session is served only by the front end that
started it, while it runs, as the SDK's own sessions are. An ``initialize`` too big
to seal (``session_seal.MAX_SEALED_BYTES``, or an id longer than ``MAX_ID_CHARS``:
headers proxies and servers accept) gets the SDK's own session.

``DELETE`` ends the session on the front end that receives it at once, and on every
other front end of the deployment within about a second (``session_logouts``: told
through Temporal, read in the background, never on a request's path).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from typing import Any

import anyio
from fastmcp import FastMCP
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp_types import INTERNAL_ERROR, INVALID_REQUEST
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from fastmcp_temporal import _compat
from fastmcp_temporal.server.protocol.session_seal import MAX_ID_CHARS, SessionSeal

__all__ = ["MAX_ID_CHARS", "PortableSessions", "SessionSeal", "install", "sealing"]

logger = logging.getLogger(__name__)

#: Where the seal rides: on the SDK server FastMCP's session manager holds as ``app``,
#: the one object of this server the manager FastMCP builds can reach. Goes with
#: ``_compat.StatefulSessions``.
_SEAL_ATTRIBUTE = "_fastmcp_temporal_session_seal"
#: The id of a replayed ``initialize`` (a client's own request ids are its own).
_REPLAY_ID = "fastmcp-temporal/rebuilt-session"


def _caller(scope: Scope) -> AccessToken | None:
    user = scope.get("user")
    return user.access_token if isinstance(user, AuthenticatedUser) else None


class PortableSessions(_compat.StatefulSessions):
    """FastMCP's session manager, minting sealed ids and rebuilding sessions it does not serve."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Sessions this process is rebuilding: their other requests wait for the handshake.
        self._rebuilding: dict[str, anyio.Event] = {}

    async def handle_stateful(self, scope: Scope, receive: Receive, send: Send) -> None:
        seal: SessionSeal | None = getattr(self.app, _SEAL_ATTRIBUTE, None)
        if seal is None:
            await self.sdk_handling(scope, receive, send)
            return
        caller = _caller(scope)
        session_id = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
        if session_id is None:
            await self._open_new(seal, caller, scope, receive, send)
            return
        if seal.minted(session_id):
            params = seal.open(session_id, caller)
            if params is None:
                logger.info("fastmcp-temporal: refused session %s (unknown)", session_id[:16])
                await _refusal("Session not found", 404, INVALID_REQUEST)(scope, receive, send)
                return
            if not await self._served_here(session_id, params, scope):
                await _too_many_sessions(scope, receive, send)
                return
            if scope["method"] == "DELETE":
                seal.end(session_id)
        await self.sdk_handling(scope, receive, send)

    async def _open_new(
        self,
        seal: SessionSeal,
        caller: AccessToken | None,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        """A request without a session id: an ``initialize`` opens a session under a sealed id."""
        if scope["method"] != "POST":
            await self.sdk_handling(scope, receive, send)
            return
        try:
            body = await Request(scope, receive).body()
        except ClientDisconnect:
            return
        replay = _replaying(body, receive)
        session_id = seal.mint(body, caller)
        if session_id is None:
            await self.sdk_handling(scope, replay, send)
            return
        async with self.creation_lock:
            transport = self.admit(session_id, scope)
        if transport is None:
            await _too_many_sessions(scope, receive, send)
            return
        await self.serve_opening(transport, scope, replay, send)

    async def _served_here(self, session_id: str, params: dict[str, Any], scope: Scope) -> bool:
        """Serve the session here, rebuilding it if this process does not have it yet.

        ``False``: at ``max_sessions``. A rebuild that fails leaves the session unknown
        here, and the SDK answers ``404``.
        """
        async with self.creation_lock:
            rebuilding = self._rebuilding.get(session_id)
            transport = None
            if rebuilding is None and not self.serves(session_id):
                transport = self.admit(session_id, scope)
                if transport is None:
                    return False
                self._rebuilding[session_id] = anyio.Event()
        if transport is not None:
            await self._rebuild(transport, session_id, params, scope)
        elif rebuilding is not None:
            await rebuilding.wait()
        return True

    async def _rebuild(
        self,
        transport: StreamableHTTPServerTransport,
        session_id: str,
        params: dict[str, Any],
        scope: Scope,
    ) -> None:
        """Replay the session's handshake into its new transport, as its client once sent it."""
        try:
            initialize = {"jsonrpc": "2.0", "id": _REPLAY_ID, "method": "initialize"}
            await self.serve_opening(transport, *_posted(scope, {**initialize, "params": params}))
            if self.serves(session_id):
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                await transport.handle_request(*_posted(scope, initialized))
                logger.info("fastmcp-temporal: rebuilt session %s here", session_id[:16])
        finally:
            self._rebuilding.pop(session_id).set()


def _replaying(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the request body, already read, delivered again first."""
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if delivered:
            return await receive()
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def _posted(scope: Scope, message: dict[str, Any]) -> tuple[Scope, Receive, Send]:
    """``message`` as a POST of the request in ``scope`` (same caller, same session id),
    for this process only: its response goes nowhere."""
    body = json.dumps(message).encode()
    replaced = {b"content-type", b"accept", b"content-length"}
    headers = [(name, value) for name, value in scope["headers"] if name not in replaced]
    headers += [
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-length", str(len(body)).encode()),
    ]
    delivered = False
    answered = anyio.Event()

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # a client that hangs up once it has the whole answer
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            answered.set()

    return {**scope, "method": "POST", "headers": headers}, receive, send


def _refusal(message: str, status: int, code: int) -> Response:
    """A JSON-RPC error without a request id, as the SDK's session manager answers."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return Response(
        json.dumps(body, separators=(",", ":")), status_code=status, media_type="application/json"
    )


async def _too_many_sessions(scope: Scope, receive: Receive, send: Send) -> None:
    await _refusal("Too many open sessions", 503, INTERNAL_ERROR)(scope, receive, send)


def install() -> None:
    """Make FastMCP's HTTP apps manage sessions with ``PortableSessions`` (inert without a seal)."""
    _compat.use_session_manager(PortableSessions)


@contextlib.contextmanager
def sealing(server: FastMCP, scope_secret: bytes | None, max_age_s: float) -> Iterator[SessionSeal]:
    """While inside, ``server``'s 2025-xx sessions get sealed ids any front end serves;
    the seal it yields shares logouts once ``SessionSeal.sharing_logouts`` runs."""
    low_level = _compat.low_level_server(server)
    seal = SessionSeal.for_deployment(scope_secret, max_age_s)
    setattr(low_level, _SEAL_ATTRIBUTE, seal)
    try:
        yield seal
    finally:
        setattr(low_level, _SEAL_ATTRIBUTE, None)
