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
  ``sync_questions.deliver_answer``, ``peer_cancels.cancel_elsewhere``); an answer
  naming the SDK's own number of such a question is not its answer (the client never
  saw that number: another front end's inline question was numbered alike) and is
  dropped.

FastMCP sees the local id: ``ctx.session_id`` (and with it FastMCP's session
state) is the front end's own. An app built before the extension was added to its
server (``app = mcp.http_app()`` first) serves the SDK's own sessions.
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
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp_types import INTERNAL_ERROR, INVALID_REQUEST
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fastmcp_temporal.server.protocol.asgi_messages import (
    SESSION_HEADER,
    Replayed,
    caller_scope,
    header,
    is_answer,
    is_cancel,
    is_response,
    json_message,
    posted,
    read_body,
    refusal,
    replaying,
    request_id_of,
    token_of,
    with_header,
)
from fastmcp_temporal.server.protocol.live_calls import LiveCalls
from fastmcp_temporal.server.protocol.peer_cancels import cancel_elsewhere
from fastmcp_temporal.server.protocol.sessions import SessionSeal
from fastmcp_temporal.server.protocol.sync_questions import deliver_answer
from fastmcp_temporal.server.tasks.engine import TaskEngine

logger = logging.getLogger(__name__)

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
        caller = caller_scope(scope)
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
        params = seal.open(session_id, token_of(scope))
        if params is None:
            logger.info("fastmcp-temporal: refused session %s (unknown)", session_id[:16])
            await refusal("Session not found", 404, INVALID_REQUEST)(scope, receive, send)
            return
        body, receive = await read_body(scope, receive)
        message = json_message(body)
        calls = self.seam.calls
        local_id = calls.local_session(session_id)
        if is_answer(message) and calls.asked_here(local_id, message["id"]) is None:
            # Not this front end's question: its task takes the answer.
            delivered = await deliver_answer(engine, calls, message, session_id, caller)
            await delivered(scope, receive, send)
            return
        if is_response(message) and calls.renamed(local_id, message["id"]):
            logger.warning(
                "fastmcp-temporal: dropped an answer to request %s of session %s: this front "
                "end asked nothing under that id (another front end's inline question?)",
                str(message["id"])[:32],
                session_id[:16],
            )
            await Response(status_code=202)(scope, receive, send)
            return
        if is_cancel(message):
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
                await refusal("Too many open sessions", 503, INTERNAL_ERROR)(scope, receive, send)
                return
            served = await self._forward(session_id, local_id, message, body, scope, receive, send)
            if served or attempt:
                break
            calls.unpair(session_id)  # the SDK ended it (idle): rebuild, once
            receive = replaying(body, receive)
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
        body, receive = await read_body(scope, receive)
        session_id = seal.mint(body, token_of(scope)) if body is not None else None
        if session_id is None:
            await self.app(scope, receive, send)  # not a sealable initialize: the SDK's own
            return
        calls = self.seam.calls

        async def sealing(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                local_id = header(message, SESSION_HEADER)
                if local_id is not None:
                    calls.pair(session_id, local_id)
                    message = with_header(message, SESSION_HEADER, session_id)
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
        answer = Replayed()
        await self.app(*posted(scope, initialize, None, answer))
        if answer.status is None or answer.status >= 400 or answer.session_id is None:
            if answer.status != 503:
                logger.warning("fastmcp-temporal: rebuilding a session got HTTP %s", answer.status)
            return None
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.app(*posted(scope, initialized, answer.session_id, Replayed()))
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
        ticket = calls.asked_here(local_id, message["id"]) if is_answer(message) else None
        if ticket is not None:  # the answer to this front end's question: the SDK's own id
            body = json.dumps({**message, "id": ticket.sdk_id}).encode()
            receive = replaying(body, receive)
        headers = [
            (name, value)
            for name, value in scope["headers"]
            if name not in (SESSION_HEADER, b"content-length")
        ]
        headers.append((SESSION_HEADER, local_id.encode()))
        if body is not None:
            headers.append((b"content-length", str(len(body)).encode()))
        request_id = request_id_of(message)
        questions = _Questions(calls, local_id, session_id, caller_scope(scope), request_id)
        gone = False

        async def relaying(reply: Message) -> None:
            nonlocal gone
            if reply["type"] == "http.response.start":
                if reply["status"] == 404 and calls.local_session(session_id) == local_id:
                    gone = body is not None or scope["method"] != "POST"
                if not gone:
                    await send(with_header(reply, SESSION_HEADER, session_id))
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
