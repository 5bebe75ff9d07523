"""ASGI plumbing of the session seam (``portable_sessions``): bodies read once and
replayed, requests replayed through the app, headers, and the JSON-RPC shapes it looks for."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from fastmcp_temporal.server.core.scope import principal_scope
from fastmcp_temporal.server.protocol.live_calls import ANSWER_ID_PREFIX

SESSION_HEADER = MCP_SESSION_ID_HEADER.lower().encode()


@dataclass
class Replayed:
    """What the app answered a replayed request: its status and session id."""

    status: int | None = None
    session_id: str | None = None


def posted(
    scope: Scope, message: dict[str, Any], local_id: str | None, answer: Replayed
) -> tuple[Scope, Receive, Send]:
    """``message`` as a POST of the request in ``scope`` (same caller), in the local
    session ``local_id`` (``None``: none), for this process only."""
    body = json.dumps(message).encode()
    replaced = {b"content-type", b"accept", b"content-length", SESSION_HEADER}
    headers = [(name, value) for name, value in scope["headers"] if name not in replaced]
    headers += [
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-length", str(len(body)).encode()),
    ]
    if local_id is not None:
        headers.append((SESSION_HEADER, local_id.encode()))
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
            answer.session_id = header(reply, SESSION_HEADER)
        if reply["type"] == "http.response.body" and not reply.get("more_body", False):
            answered.set()

    return {**scope, "method": "POST", "headers": headers}, receive, send


async def read_body(scope: Scope, receive: Receive) -> tuple[bytes | None, Receive]:
    """A POST's body, read once (``None``: not a POST, or longer than the SDK takes --
    it refuses that itself), and ``receive`` delivering it again."""
    if scope["method"] != "POST":
        return None, receive
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None, replaying(b"".join(chunks), receive, last=message)
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if not message.get("more_body", False):
            body = b"".join(chunks)
            return body, replaying(body, receive)
        if size > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return None, replaying(b"".join(chunks), receive, more=True)


def replaying(
    body: bytes | None, receive: Receive, *, more: bool = False, last: Message | None = None
) -> Receive:
    """``receive`` with ``body`` (already read) delivered again first."""
    queued: list[Message] = [{"type": "http.request", "body": body or b"", "more_body": more}]
    if last is not None:
        queued.append(last)

    async def replay() -> Message:
        return queued.pop(0) if queued else await receive()

    return replay


def json_message(body: bytes | None) -> Any:
    """The JSON a body holds, else ``None``."""
    if body is None:
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None  # the SDK answers it -32700, as without us


def is_answer(message: Any) -> bool:
    """An answer (a JSON-RPC response) to a question asked under a wire id (``live_calls``)."""
    return (
        isinstance(message, dict)
        and "method" not in message
        and isinstance(message.get("id"), str)
        and message["id"].startswith(ANSWER_ID_PREFIX)
        and ("result" in message or "error" in message)
    )


def is_response(message: Any) -> bool:
    """A JSON-RPC response (an answer to a server-to-client request), whatever its id."""
    return (
        isinstance(message, dict)
        and "method" not in message
        and isinstance(message.get("id"), str | int)
        and ("result" in message or "error" in message)
    )


def is_cancel(message: Any) -> bool:
    """A well-formed ``notifications/cancelled``."""
    return (
        isinstance(message, dict)
        and message.get("method") == "notifications/cancelled"
        and isinstance(message.get("params"), dict)
        and isinstance(message["params"].get("requestId"), str | int)
    )


def request_id_of(message: Any) -> str | None:
    """A request's id, as FastMCP spells it (``Context.request_id``); ``None`` for the rest."""
    if isinstance(message, dict) and "method" in message and "id" in message:
        return str(message["id"])
    return None


def token_of(scope: Scope) -> Any:
    """The caller's access token, if the auth middleware authenticated one."""
    user = scope.get("user")
    return user.access_token if isinstance(user, AuthenticatedUser) else None


def caller_scope(scope: Scope) -> str | None:
    """The caller's task scope (``scope.task_scope``), from the request's user."""
    token = token_of(scope)
    return None if token is None else principal_scope(token)


def header(message: Message, name: bytes) -> str | None:
    """A response start's header ``name``, if it has one."""
    for key, value in message.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def with_header(message: Message, name: bytes, value: str) -> Message:
    """A response start with header ``name`` set to ``value``, if it had one."""
    headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != name]
    if len(headers) == len(message.get("headers", [])):
        return message  # it had none: a refusal, not the session's answer
    return {**message, "headers": [*headers, (name, value.encode())]}


def refusal(message: str, status: int, code: int) -> Response:
    """A JSON-RPC error without a request id, as the SDK's session manager answers."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return Response(
        json.dumps(body, separators=(",", ":")), status_code=status, media_type="application/json"
    )
