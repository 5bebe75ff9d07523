"""The HTTP seam of sessions any front end serves: an ASGI middleware on this server's app.

FastMCP builds each HTTP app of a server with ``server.http_app(middleware=...)``.
``TemporalTasks`` wraps that method *of its own server instance* (``serve_on``) so
every streamable-HTTP app built for it gets ``PortableSessions`` inside its auth
middleware: no class or module name of FastMCP, the MCP SDK or uvicorn changes,
and another FastMCP server in the process is served as FastMCP serves it.

Between the client and the SDK's session manager the middleware keeps the sealed
id (``sessions.SessionSeal``) the client knows, and the SDK keeps its own:

- an ``initialize`` goes to the SDK as it came; its answer's ``Mcp-Session-Id``
  (the SDK's id) is paired with a sealed id minted from the request, which the
  client gets instead;
- a request with a sealed id is opened (caller, age, deployment: else ``404``) and
  goes to the SDK under the paired local id, its answer back under the sealed one;
  a front end without a local session for it (or whose session the SDK ended, an
  idle timeout: its ``404``) first replays the sealed ``initialize`` and
  ``notifications/initialized`` through the app itself, which mints a local id;
- a question a durable call asks goes out under an id of its own, and an answer
  to one, or a ``notifications/cancelled`` for a durable call, that this front end
  does not hold goes to the task through Temporal (``live_calls``,
  ``sync_questions.deliver_answer``, ``peer_cancels.cancel_elsewhere``).

FastMCP sees the local id: ``ctx.session_id`` (and with it FastMCP's session
state) is the front end's own.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from fastmcp import FastMCP
from fastmcp import settings as fastmcp_settings
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp_types import INTERNAL_ERROR, INVALID_REQUEST
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fastmcp_temporal.server.core.scope import principal_scope
from fastmcp_temporal.server.protocol.live_calls import ANSWER_ID_PREFIX, LiveCalls
from fastmcp_temporal.server.protocol.peer_cancels import cancel_elsewhere
from fastmcp_temporal.server.protocol.sessions import SessionSeal
from fastmcp_temporal.server.protocol.sync_questions import deliver_answer
from fastmcp_temporal.server.tasks.engine import TaskEngine

logger = logging.getLogger(__name__)

_SESSION_HEADER = MCP_SESSION_ID_HEADER.lower().encode()
_VERSION_HEADER = b"mcp-protocol-version"
#: The id of a replayed ``initialize`` (a client's own request ids are its own).
_REPLAY_ID = "fastmcp-temporal/rebuilt-session"
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


@dataclass
class SessionSeam:
    """One server's sessions as its HTTP apps serve them; sealed while its lifespan runs."""

    calls: LiveCalls = field(default_factory=LiveCalls)
    seal: SessionSeal | None = None
    engine: TaskEngine | None = None
    #: Sessions being rebuilt here: their other requests wait for the handshake.
    rebuilding: dict[str, anyio.Event] = field(default_factory=dict)

    @contextmanager
    def serving(self, seal: SessionSeal, engine: TaskEngine) -> Iterator[None]:
        """While inside, 2025-xx sessions get sealed ids any front end serves."""
        self.seal, self.engine = seal, engine
        self.calls.keyed(engine.scope_secret)
        try:
            yield
        finally:
            self.seal = self.engine = None


def serve_on(server: FastMCP, seam: SessionSeam) -> None:
    """Have every streamable-HTTP app built for ``server`` served through ``seam``.

    Wraps this server instance's ``http_app`` (what ``run``, ``fastmcp run`` and a
    user's ASGI deployment call), once, to pass ``PortableSessions`` as the last of
    its ``middleware`` (inside FastMCP's auth middleware, after the user's own);
    other servers and FastMCP's class are untouched. A stateless or SSE app has
    no sessions and gets nothing.
    """
    built = server.http_app
    if getattr(built, "portable_sessions", None) is seam:
        return
    signature = inspect.signature(built)

    def http_app(*args: Any, **kwargs: Any) -> Any:
        given = signature.bind(*args, **kwargs).arguments
        stateless = given.get("stateless_http")
        if stateless is None:
            stateless = fastmcp_settings.stateless_http
        if given.get("transport", "http") in ("http", "streamable-http") and not stateless:
            given["middleware"] = [
                *(given.get("middleware") or []),
                Middleware(PortableSessions, seam=seam),
            ]
        return built(**given)

    http_app.portable_sessions = seam  # type: ignore[attr-defined]
    server.http_app = http_app  # type: ignore[method-assign]


class PortableSessions:
    """Serves sealed session ids through the SDK's own sessions (see the module docstring)."""

    def __init__(self, app: ASGIApp, seam: SessionSeam) -> None:
        self.app, self.seam = app, seam

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        seal, engine = self.seam.seal, self.seam.engine
        if seal is None or engine is None or not self._handshake_era_mcp(scope):
            await self.app(scope, receive, send)
            return
        caller = _caller_scope(scope)
        session_id = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
        if session_id is None:
            if scope["method"] == "POST":
                await self._open_new(seal, scope, receive, send)
            else:
                await self.app(scope, receive, send)
            return
        if not seal.minted(session_id):
            await self.app(scope, receive, send)  # one of the SDK's own: as it was
            return
        params = seal.open(session_id, _token(scope))
        if params is None:
            logger.info("fastmcp-temporal: refused session %s (unknown)", session_id[:16])
            await _refusal("Session not found", 404, INVALID_REQUEST)(scope, receive, send)
            return
        body, receive = await _read_body(scope, receive)
        message = _message(body)
        calls = self.seam.calls
        local_id = calls.local_session(session_id)
        if _is_answer(message) and calls.asked_here(local_id, message["id"]) is None:
            # Not this front end's question: its task takes the answer.
            delivered = await deliver_answer(engine, calls, message, session_id, caller)
            await delivered(scope, receive, send)
            return
        if _is_cancel(message):
            request_id = str(message["params"].get("requestId"))
            if not calls.holds(local_id, request_id):
                reason = message["params"].get("reason")
                await cancel_elsewhere(engine, calls, session_id, caller, request_id, reason)
                if local_id is None:
                    await Response(status_code=202)(scope, receive, send)
                    return
        if scope["method"] == "DELETE":
            seal.end(session_id)
        for attempt in range(2):
            local_id = await self._local_session(session_id, params, scope)
            if local_id is None:
                await _refusal("Too many open sessions", 503, INTERNAL_ERROR)(scope, receive, send)
                return
            served = await self._forward(session_id, local_id, message, body, scope, receive, send)
            if served or attempt:
                break
            calls.unpair(session_id)  # the SDK ended it (idle): rebuild, once
            receive = _replaying(body, receive)
        if scope["method"] == "DELETE":
            calls.unpair(session_id)

    def _handshake_era_mcp(self, scope: Scope) -> bool:
        if scope["type"] != "http":
            return False
        served = getattr(scope["app"].state, "path", None)  # the app's MCP endpoint
        path = scope["path"].removeprefix(scope.get("root_path", ""))
        if served is None or path.rstrip("/") != served.rstrip("/"):
            return False
        version = Headers(scope=scope).get(_VERSION_HEADER.decode())
        return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS

    async def _open_new(
        self, seal: SessionSeal, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """An ``initialize``: the SDK opens the session, the client gets a sealed id for it."""
        body, receive = await _read_body(scope, receive)
        session_id = seal.mint(body, _token(scope)) if body is not None else None
        if session_id is None:
            await self.app(scope, receive, send)  # not a sealable initialize: the SDK's own
            return
        calls = self.seam.calls

        async def sealing(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                local_id = _header(message, _SESSION_HEADER)
                if local_id is not None:
                    calls.pair(session_id, local_id)
                    message = _with_header(message, _SESSION_HEADER, session_id)
            await send(message)

        await self.app(scope, receive, sealing)

    async def _local_session(
        self, session_id: str, params: dict[str, Any], scope: Scope
    ) -> str | None:
        """The local session serving ``session_id``, rebuilt if there is none (``None``: at
        the SDK's ``max_sessions``)."""
        calls = self.seam.calls
        while (local_id := calls.local_session(session_id)) is None:
            rebuilding = self.seam.rebuilding.get(session_id)
            if rebuilding is not None:
                await rebuilding.wait()
                continue
            self.seam.rebuilding[session_id] = anyio.Event()
            try:
                local_id = await self._rebuild(params, scope)
                if local_id is None:
                    return None
                calls.pair(session_id, local_id)
                logger.info("fastmcp-temporal: rebuilt session %s here", session_id[:16])
            finally:
                self.seam.rebuilding.pop(session_id).set()
        return local_id

    async def _rebuild(self, params: dict[str, Any], scope: Scope) -> str | None:
        """Replay the session's handshake through the app, as its client once sent it."""
        initialize = {"jsonrpc": "2.0", "id": _REPLAY_ID, "method": "initialize", "params": params}
        answer = _Answer()
        await self.app(*_posted(scope, initialize, None, answer))
        if answer.status is None or answer.status >= 400 or answer.session_id is None:
            if answer.status != 503:
                logger.warning("fastmcp-temporal: rebuilding a session got HTTP %s", answer.status)
            return None
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.app(*_posted(scope, initialized, answer.session_id, _Answer()))
        return answer.session_id

    async def _forward(
        self,
        session_id: str,
        local_id: str,
        message: Any,
        body: bytes | None,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> bool:
        """Serve the request from the local session; ``False``: the SDK no longer has it
        (nothing was sent, ``receive`` is unread when a body was buffered)."""
        calls = self.seam.calls
        ticket = calls.asked_here(local_id, message["id"]) if _is_answer(message) else None
        if ticket is not None:  # the answer to this front end's question: the SDK's own id
            body = json.dumps({**message, "id": ticket.sdk_id}).encode()
            receive = _replaying(body, receive)
        headers = [
            (name, value)
            for name, value in scope["headers"]
            if name not in (_SESSION_HEADER, b"content-length")
        ]
        headers.append((_SESSION_HEADER, local_id.encode()))
        if body is not None:
            headers.append((b"content-length", str(len(body)).encode()))
        request_id = _request_id(message)
        questions = _Questions(calls, local_id, session_id, _caller_scope(scope), request_id)
        gone = False

        async def relaying(reply: Message) -> None:
            nonlocal gone
            if reply["type"] == "http.response.start":
                if reply["status"] == 404 and calls.local_session(session_id) == local_id:
                    gone = body is not None or scope["method"] != "POST"
                if not gone:
                    await send(_with_header(reply, _SESSION_HEADER, session_id))
            elif not gone:
                if request_id is not None and reply["type"] == "http.response.body":
                    reply = questions.rewritten(reply)
                await send(reply)

        await self.app({**scope, "headers": headers}, receive, relaying)
        return not gone


class _Questions:
    """A POSTed request's SSE answer, each durable call's question in it under its own id
    (and the SDK's courtesy cancel of one it abandons, under that id too)."""

    def __init__(
        self,
        calls: LiveCalls,
        local_id: str,
        session_id: str,
        caller: str | None,
        request_id: str | None,
    ) -> None:
        self.calls, self.local_id, self.session_id = calls, local_id, session_id
        self.caller, self.request_id = caller, request_id
        self.pending = b""
        #: The SDK's id of each question this stream carried -> its wire id.
        self.sent: dict[Any, str] = {}

    def rewritten(self, reply: Message) -> Message:
        """``reply``'s body, each complete SSE event in it as ``_event`` has it."""
        if not (self.pending or self.sent or self._expecting()):
            return reply
        data = self.pending + reply.get("body", b"")
        out: list[bytes] = []
        start = 0
        for end in _EVENT_END.finditer(data):
            out.append(self._event(data[start : end.start()]) + end.group())
            start = end.end()
        self.pending = data[start:]
        if not reply.get("more_body", False):
            out.append(self.pending)
            self.pending = b""
        return {**reply, "body": b"".join(out)}

    def _expecting(self) -> bool:
        return self.request_id is not None and self.calls.expecting(self.local_id, self.request_id)

    def _event(self, event: bytes) -> bytes:
        for line in event.splitlines():
            if not line.startswith(b"data:"):
                continue
            try:
                frame = json.loads(line[5:])
            except ValueError:
                return event
            if not isinstance(frame, dict):
                return event
            params = frame.get("params")
            if "method" in frame and "id" in frame and self._expecting():
                assert self.request_id is not None
                ref = self.calls.next_ref(self.local_id, self.request_id)
                wire_id = self.calls.answer_id(ref, self.session_id, self.caller)
                self.calls.take(self.local_id, self.request_id, frame["id"], wire_id)
                self.sent[frame["id"]] = wire_id
                frame["id"] = wire_id
            elif (
                frame.get("method") == "notifications/cancelled"
                and isinstance(params, dict)
                and isinstance(params.get("requestId"), str | int)
                and params["requestId"] in self.sent
            ):
                frame["params"] = {**params, "requestId": self.sent[params["requestId"]]}
            else:
                return event
            return event.replace(line, b"data: " + json.dumps(frame).encode(), 1)
        return event


@dataclass
class _Answer:
    """What the app answered a replayed request: its status and session id."""

    status: int | None = None
    session_id: str | None = None


def _posted(
    scope: Scope, message: dict[str, Any], local_id: str | None, answer: _Answer
) -> tuple[Scope, Receive, Send]:
    """``message`` as a POST of the request in ``scope`` (same caller), in the local
    session ``local_id`` (``None``: none), for this process only."""
    body = json.dumps(message).encode()
    replaced = {b"content-type", b"accept", b"content-length", _SESSION_HEADER}
    headers = [(name, value) for name, value in scope["headers"] if name not in replaced]
    headers += [
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-length", str(len(body)).encode()),
    ]
    if local_id is not None:
        headers.append((_SESSION_HEADER, local_id.encode()))
    delivered = False
    answered = anyio.Event()

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # a client that hangs up once it has the whole answer
        return {"type": "http.disconnect"}

    async def send(reply: Message) -> None:
        if reply["type"] == "http.response.start":
            answer.status = reply["status"]
            answer.session_id = _header(reply, _SESSION_HEADER)
        if reply["type"] == "http.response.body" and not reply.get("more_body", False):
            answered.set()

    return {**scope, "method": "POST", "headers": headers}, receive, send


async def _read_body(scope: Scope, receive: Receive) -> tuple[bytes | None, Receive]:
    """A POST's body, read once (``None``: not a POST, or longer than the SDK takes --
    it refuses that itself), and ``receive`` delivering it again."""
    if scope["method"] != "POST":
        return None, receive
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None, _replaying(b"".join(chunks), receive, last=message)
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if not message.get("more_body", False):
            body = b"".join(chunks)
            return body, _replaying(body, receive)
        if size > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return None, _replaying(b"".join(chunks), receive, more=True)


def _replaying(
    body: bytes | None, receive: Receive, *, more: bool = False, last: Message | None = None
) -> Receive:
    """``receive`` with ``body`` (already read) delivered again first."""
    queued: list[Message] = [{"type": "http.request", "body": body or b"", "more_body": more}]
    if last is not None:
        queued.append(last)

    async def replay() -> Message:
        return queued.pop(0) if queued else await receive()

    return replay


def _message(body: bytes | None) -> Any:
    if body is None:
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None  # the SDK answers it -32700, as without us


def _is_answer(message: Any) -> bool:
    return (
        isinstance(message, dict)
        and "method" not in message
        and isinstance(message.get("id"), str)
        and message["id"].startswith(ANSWER_ID_PREFIX)
        and ("result" in message or "error" in message)
    )


def _is_cancel(message: Any) -> bool:
    return (
        isinstance(message, dict)
        and message.get("method") == "notifications/cancelled"
        and isinstance(message.get("params"), dict)
        and isinstance(message["params"].get("requestId"), str | int)
    )


def _request_id(message: Any) -> str | None:
    if isinstance(message, dict) and "method" in message and "id" in message:
        return str(message["id"])
    return None


def _token(scope: Scope) -> Any:
    user = scope.get("user")
    return user.access_token if isinstance(user, AuthenticatedUser) else None


def _caller_scope(scope: Scope) -> str | None:
    token = _token(scope)
    return None if token is None else principal_scope(token)


def _header(message: Message, name: bytes) -> str | None:
    for key, value in message.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _with_header(message: Message, name: bytes, value: str) -> Message:
    headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != name]
    if len(headers) == len(message.get("headers", [])):
        return message  # it had none: a refusal, not the session's answer
    return {**message, "headers": [*headers, (name, value.encode())]}


def _refusal(message: str, status: int, code: int) -> Response:
    """A JSON-RPC error without a request id, as the SDK's session manager answers."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return Response(
        json.dumps(body, separators=(",", ":")), status_code=status, media_type="application/json"
    )
