"""2025-xx MCP sessions any front end serves: the session id carries the session.

On the handshake-era wire (``initialize``, protocol 2025-03-26 to 2025-11-25, as
Codex speaks it) a client sends the id ``initialize`` gave it (``Mcp-Session-Id``)
with every later request. The MCP SDK keeps the session in the memory of the
process that answered ``initialize``, so behind a load balancer the next request,
on another front end, got ``404 Session not found`` -- and so did every session of
a front end a deploy stopped. The MCP Python client does not start over after that
404: its session stays broken.

Here the id *is* the session: the ``initialize`` params the client sent (protocol
version, capabilities, client info), the version the SDK negotiated for them and
when, compressed and sealed with AES-256-GCM under a key every front end derives
from the scope secret, with the caller's principal (``scope.principal_scope``) as
associated data. A front end that gets an id it does
not serve opens it and rebuilds the session by replaying that ``initialize`` and
``notifications/initialized`` through the SDK's own handshake, so the session
negotiates there what it negotiated where it began, and FastMCP's ``on_initialize``
middleware runs for it there too. An id that is forged, altered, sealed under
another secret or sent by another caller opens to nothing: an unknown session,
``404``, as before; each request checks it, also on the front end that serves it.
So does an id past ``session_max_age_s`` (no id lives for ever: an anonymous
caller's is a bearer token), one a front end would negotiate another protocol
version for (replicas of different SDKs mid-upgrade: the client initializes again),
and one spelled any way but the one it was minted in. No store: a random nonce
makes every id unique (FastMCP keys session state by it).

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
- ``DELETE`` ends the session on the front end that receives it, which refuses the
  id from then on; another front end serves it until its ``session_max_age_s``
  (no revocation without a store).

Subscriptions need nothing: FastMCP serves no ``resources/subscribe``, and
``subscriptions/listen`` (2026-07-28) is a request of its own, without a session.

Without a scope secret (a Temporal address and no ``FASTMCP_TEMPORAL_SCOPE_SECRET``)
the key is this process's own: a session is served only by the front end that
started it, while it runs, as the SDK's own sessions are. An ``initialize`` whose id
would be longer than ``MAX_ID_CHARS`` (headers proxies and servers accept) gets the
SDK's own session.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import anyio
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from fastmcp import FastMCP
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp_types import INTERNAL_ERROR, INVALID_REQUEST, InitializeRequestParams
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from fastmcp_temporal import _compat
from fastmcp_temporal.server.core.scope import SCOPE_SECRET_ENV, principal_scope

logger = logging.getLogger(__name__)

#: Longest id minted: within the 4-8 KiB header lines proxies and uvicorn accept.
MAX_ID_CHARS = 4096
#: Marks an id this module sealed (the SDK's own ids are 32 hex digits). ``s1.`` ids
#: (no age, no negotiated version) are no longer opened: the SDK answers them ``404``.
_PREFIX = "s2."
_KEY_LABEL = b"fastmcp-temporal/mcp-session/v2"
_NONCE_BYTES = 12
#: The one spelling of a minted id after its prefix: unpadded base64url. The decoder
#: skips other characters, which would give one id many spellings (and a blank in
#: one is refused by the SDK's transport).
_ENCODED = re.compile(r"[A-Za-z0-9_-]+")
#: Ids ended here by ``DELETE`` remembered at most (the oldest forgotten first).
_ENDED_KEPT = 10_000
#: Where the seal rides: on the SDK server FastMCP's session manager holds as ``app``,
#: the one object of this server the manager FastMCP builds can reach. Goes with
#: ``_compat.StatefulSessions``.
_SEAL_ATTRIBUTE = "_fastmcp_temporal_session_seal"
#: The id of a replayed ``initialize`` (a client's own request ids are its own).
_REPLAY_ID = "fastmcp-temporal/rebuilt-session"


class SessionSeal:
    """Seals a session's ``initialize`` params into its id, bound to its caller, and opens it."""

    def __init__(
        self, key: bytes, max_age_s: float, clock: Callable[[], float] = time.time
    ) -> None:
        self._aead = AESGCM(key)
        self._max_age_s = max_age_s
        self._clock = clock
        #: Ids ``DELETE``d here, with when they would have expired anyway.
        self._ended: dict[str, float] = {}

    @classmethod
    def for_deployment(cls, scope_secret: bytes | None, max_age_s: float) -> SessionSeal:
        """Under a key derived from the deployment's scope secret, else this process's own."""
        if scope_secret is None:
            logger.info(
                "fastmcp-temporal: no scope secret (%s): a 2025-xx MCP session is served "
                "only by the front end that started it",
                SCOPE_SECRET_ENV,
            )
            return cls(os.urandom(32), max_age_s)
        return cls(hmac.new(scope_secret, _KEY_LABEL, hashlib.sha256).digest(), max_age_s)

    def mint(self, opening_body: bytes, caller: AccessToken | None) -> str | None:
        """A new session's id, if ``opening_body`` is a well-formed ``initialize`` request.

        ``None`` for anything else (the SDK answers it as it always did) and for an
        id too long to travel as a header.
        """
        params = _initialize_params(opening_body)
        if params is None:
            return None
        session = {"params": params, "version": _negotiated(params), "issued": self._clock()}
        session_id = self.seal(session, caller)
        if len(session_id) > MAX_ID_CHARS:
            logger.warning(
                "fastmcp-temporal: a session id of %d characters would exceed %d; this "
                "session is served only by the front end that started it",
                len(session_id),
                MAX_ID_CHARS,
            )
            return None
        return session_id

    def seal(self, session: dict[str, Any], caller: AccessToken | None) -> str:
        """``session`` (its params, negotiated version and issue time) as an id."""
        plain = zlib.compress(json.dumps(session, separators=(",", ":")).encode())
        nonce = os.urandom(_NONCE_BYTES)
        sealed = nonce + self._aead.encrypt(nonce, plain, _bound_to(caller))
        return _PREFIX + base64.urlsafe_b64encode(sealed).rstrip(b"=").decode()

    def open(self, session_id: str, caller: AccessToken | None) -> dict[str, Any] | None:
        """The ``initialize`` params sealed in ``session_id`` for ``caller``, else ``None``:
        also for an id past its age, ended here, or one this SDK would negotiate
        another protocol version for."""
        encoded = session_id.removeprefix(_PREFIX)
        if not _ENCODED.fullmatch(encoded):
            return None
        try:
            sealed = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        except (binascii.Error, ValueError):
            return None
        if base64.urlsafe_b64encode(sealed).rstrip(b"=").decode() != encoded:
            return None  # trailing bits set: another spelling of some id
        try:
            nonce, ciphertext = sealed[:_NONCE_BYTES], sealed[_NONCE_BYTES:]
            plain = self._aead.decrypt(nonce, ciphertext, _bound_to(caller))
        except (ValueError, InvalidTag):
            return None
        session: dict[str, Any] = json.loads(zlib.decompress(plain))  # sealed here: a dict
        if self._clock() - session["issued"] > self._max_age_s or session_id in self._ended:
            return None
        params: dict[str, Any] = session["params"]
        if (here := _negotiated(params)) != session["version"]:
            logger.warning(
                "fastmcp-temporal: refused session %s: it negotiated protocol %s where it "
                "began, this front end's MCP SDK would negotiate %s; the client must "
                "initialize again",
                session_id[:16],
                session["version"],
                here,
            )
            return None
        return params

    def end(self, session_id: str) -> None:
        """``DELETE``d here: this process refuses the id from now on (until it expires)."""
        now = self._clock()
        self._ended = {key: until for key, until in self._ended.items() if until > now}
        while len(self._ended) >= _ENDED_KEPT:
            del self._ended[next(iter(self._ended))]
        self._ended[session_id] = now + self._max_age_s

    @staticmethod
    def minted(session_id: str) -> bool:
        """Whether ``session_id`` claims to be sealed here (not one of the SDK's own)."""
        return session_id.startswith(_PREFIX)


def _initialize_params(body: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # the SDK answers it -32700, as without us
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    params = message.get("params")
    if "id" not in message or not isinstance(params, dict):
        return None
    try:
        InitializeRequestParams.model_validate(params, by_name=False)
    except ValidationError:
        return None
    return params


def _negotiated(params: dict[str, Any]) -> str:
    """The protocol version this process's MCP SDK agrees to for ``params`` (as its
    ``initialize`` does: the one asked for if it knows it, else its latest)."""
    requested = params.get("protocolVersion")
    return requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION


def _bound_to(caller: AccessToken | None) -> bytes:
    """The associated data: whose session it is (another caller's id does not open)."""
    return b"anonymous" if caller is None else principal_scope(caller).encode()


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
def sealing(server: FastMCP, scope_secret: bytes | None, max_age_s: float) -> Iterator[None]:
    """While inside, ``server``'s 2025-xx sessions get sealed ids any front end serves."""
    low_level = _compat.low_level_server(server)
    setattr(low_level, _SEAL_ATTRIBUTE, SessionSeal.for_deployment(scope_secret, max_age_s))
    try:
        yield
    finally:
        setattr(low_level, _SEAL_ATTRIBUTE, None)
