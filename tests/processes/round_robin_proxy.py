"""A plain round-robin HTTP load balancer, as a real process, for the fleet tests.

    python -m tests.processes.round_robin_proxy PORT UPSTREAM_PORT [UPSTREAM_PORT ...]

Each request to ``127.0.0.1:PORT`` goes to the next upstream in turn (no affinity:
it reads no header), its response streamed back as it comes (SSE included), as
nginx or an AWS ALB without sticky sessions does. Two paths are the balancer's
own, for the tests:

- ``GET /_proxy/log``: every request forwarded so far, in order: its turn, the
  upstream's index, the HTTP method, its ``Mcp-Session-Id`` and what the JSON-RPC
  body was (its ``method``, ``id`` and ``params``, or ``response`` with its ``id``;
  the ``params`` of a body over 64 kB only as its size, so that a test's huge
  ``initialize`` does not weigh on every later read of the log);
- ``POST /_proxy/next`` ``{"upstream": k}``: the next turn goes to upstream ``k``
  (and round robin goes on from there), so a test can say which front end a
  request it is about to send reaches.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

import httpx
import uvicorn
from starlette.types import Message, Receive, Scope, Send

#: Hop-by-hop headers a proxy does not pass on (RFC 9110 7.6.1), and ``host``.
_HOP_BY_HOP = {
    b"connection",
    b"keep-alive",
    b"transfer-encoding",
    b"te",
    b"trailer",
    b"upgrade",
    b"proxy-connection",
    b"host",
    b"content-length",
}

#: The largest body whose ``params`` the log keeps.
_LOGGED_BODY_BYTES = 65_536


class RoundRobin:
    def __init__(self, upstreams: list[str]) -> None:
        self.upstreams = upstreams
        self.turn = 0
        self.log: list[dict[str, Any]] = []
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(30, read=None))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await self.http.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = await _body(receive)
        if scope["path"].startswith("/_proxy/"):
            await self._own(scope, body, send)
            return
        index = self.turn % len(self.upstreams)
        self.turn += 1
        session = dict(scope["headers"]).get(b"mcp-session-id", b"").decode() or None
        self.log.append(
            {
                "turn": len(self.log),
                "upstream": index,
                "method": scope["method"],
                "session": session,
                **_rpc(body),
            }
        )
        url = self.upstreams[index] + scope["path"]
        if scope["query_string"]:
            url += "?" + scope["query_string"].decode()
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP_BY_HOP]
        request = self.http.build_request(scope["method"], url, headers=headers, content=body)
        try:
            response = await self.http.send(request, stream=True)
        except httpx.HTTPError:
            await _plain(send, 502, b"upstream unreachable")
            return
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [
                        (k, v) for k, v in response.headers.raw if k.lower() not in _HOP_BY_HOP
                    ],
                }
            )
            streaming = asyncio.ensure_future(_relay(response, send))
            hanging_up = asyncio.ensure_future(_disconnected(receive))
            await asyncio.wait({streaming, hanging_up}, return_when=asyncio.FIRST_COMPLETED)
            for task in (streaming, hanging_up):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError, OSError):
                    await task
        finally:
            await response.aclose()

    async def _own(self, scope: Scope, body: bytes, send: Send) -> None:
        if scope["method"] == "POST" and scope["path"] == "/_proxy/next":
            self.turn = int(json.loads(body)["upstream"])
            await _plain(send, 204, b"")
            return
        await _plain(send, 200, json.dumps(self.log).encode(), b"application/json")


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _relay(response: httpx.Response, send: Send) -> None:
    async for chunk in response.aiter_raw():
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _disconnected(receive: Receive) -> None:
    message: Message = {}
    while message.get("type") != "http.disconnect":
        message = await receive()


async def _plain(send: Send, status: int, body: bytes, media: bytes = b"text/plain") -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", media)]}
    )
    await send({"type": "http.response.body", "body": body})


def _rpc(body: bytes) -> dict[str, Any]:
    try:
        message = json.loads(body)
    except ValueError:
        return {}
    if not isinstance(message, dict):
        return {}
    if "method" in message:
        params = message.get("params") if len(body) <= _LOGGED_BODY_BYTES else f"{len(body)} bytes"
        return {"rpc": message["method"], "id": message.get("id"), "params": params}
    return {"rpc": "response", "id": message.get("id")}


def main() -> None:
    port, *upstream_ports = sys.argv[1:]
    upstreams = [f"http://127.0.0.1:{upstream}" for upstream in upstream_ports]
    uvicorn.run(RoundRobin(upstreams), host="127.0.0.1", port=int(port), log_level="warning")


if __name__ == "__main__":
    main()
