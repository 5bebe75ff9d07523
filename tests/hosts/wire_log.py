"""What crossed the wire between a host and our server, recorded at the server's HTTP edge.

``WireLog`` is an ASGI middleware the front end of ``tests.processes.host_server``
wraps its MCP app in: every JSON-RPC message a host POSTs, and every one the server
answers with (a JSON body, or each event of an SSE stream, as it is sent), goes to
a JSONL file, one line a message. The bytes pass through unchanged. ``read`` gives
the test the messages back, so it can see what the host's real client sent (its
protocol version, its ``progressToken``, a ``notifications/cancelled``) and what the
server streamed to it -- what a proxy between them would capture, without a hop.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

FROM_HOST = "host"
FROM_SERVER = "server"


@dataclass(frozen=True)
class WireMessage:
    at: float  # time.time() when it passed
    sender: str  # FROM_HOST or FROM_SERVER
    protocol_version: str | None  # the request's MCP-Protocol-Version header
    message: dict[str, Any]

    @property
    def method(self) -> str | None:
        return self.message.get("method")


def read(path: Path) -> list[WireMessage]:
    """The messages recorded so far, in the order they passed."""
    if not path.exists():
        return []
    return [WireMessage(**json.loads(line)) for line in path.read_text().splitlines()]


class WireLog:
    def __init__(self, app: ASGIApp, path: Path) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
        version = headers.get("mcp-protocol-version")
        request = bytearray()
        response = bytearray()
        streamed = False

        async def receive_logged() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                request.extend(message.get("body", b""))
                if not message.get("more_body") and request.strip():
                    self._write(FROM_HOST, version, json.loads(request))
            return message

        async def send_logged(message: Message) -> None:
            nonlocal streamed
            if message["type"] == "http.response.start":
                kinds = [v for k, v in message.get("headers", []) if k.lower() == b"content-type"]
                streamed = any(b"text/event-stream" in kind for kind in kinds)
            elif message["type"] == "http.response.body":
                response.extend(message.get("body", b""))
                if streamed:
                    self._write_events(response, version)
                elif not message.get("more_body") and response.strip().startswith((b"{", b"[")):
                    self._write(FROM_SERVER, version, json.loads(response))
            await send(message)

        await self.app(scope, receive_logged, send_logged)

    def _write_events(self, buffer: bytearray, version: str | None) -> None:
        """Log each complete SSE event in ``buffer`` and drop it from there."""
        text = buffer.decode(errors="replace").replace("\r\n", "\n")
        *complete, rest = text.split("\n\n")
        for event in complete:
            data = "\n".join(
                line.removeprefix("data:").strip()
                for line in event.splitlines()
                if line.startswith("data:")
            )
            if data:
                self._write(FROM_SERVER, version, json.loads(data))
        buffer[:] = rest.encode()

    def _write(self, sender: str, version: str | None, payload: Any) -> None:
        messages = payload if isinstance(payload, list) else [payload]
        with open(self.path, "a") as log:
            for message in messages:
                line = WireMessage(time.time(), sender, version, message)
                log.write(json.dumps(asdict(line)) + "\n")
