"""A raw JSON-RPC client for the 2026-07-28 (stateless) streamable HTTP wire.

The FastMCP ``Client`` always does the right thing; these tests also need to do
the wrong thing on purpose (omit the extension, send a mismatched header, send
garbage) and to read the exact bytes the server answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import ssl
from collections.abc import AsyncIterator
from typing import Any

import httpx

from fastmcp_temporal.client_wire import TEMPORAL_UNAVAILABLE

PROTOCOL_VERSION = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"

#: One TLS context for every request's fresh connection: httpx builds a new one per
#: client otherwise (loading the CA bundle, ~20 ms of CPU), which was a sixth of the
#: test processes' CPU. The servers here speak plain HTTP; it is never used.
_TLS = ssl.create_default_context()


class RawMcp:
    def __init__(self, url: str, *, bearer: str | None = None) -> None:
        self.url = url
        self._ids = itertools.count(1)
        self._bearer = bearer

    async def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        declare_tasks: bool = True,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """Send one request; return the HTTP status and the JSON-RPC response."""
        request_headers, payload = self._request(method, params, declare_tasks, headers)
        # ASCII JSON, as JavaScript's JSON.stringify sends it: a lone surrogate
        # travels as its escape, "\ud800" (httpx's json= cannot encode one).
        content = json.dumps(payload).encode()
        async with httpx.AsyncClient(timeout=30, verify=_TLS) as http:
            response = await http.post(self.url, content=content, headers=request_headers)
        return response.status_code, _parse(response)

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, params: dict[str, Any] | None = None, *, declare_tasks: bool = True
    ) -> AsyncIterator[tuple[int, AsyncIterator[dict[str, Any]]]]:
        """Send one request and read its SSE stream message by message, as they arrive.

        Leaving the block closes the connection: the client goes away mid-stream.
        """
        request_headers, payload = self._request(method, params, declare_tasks, None)
        async with (
            httpx.AsyncClient(timeout=httpx.Timeout(30, read=None), verify=_TLS) as http,
            http.stream("POST", self.url, json=payload, headers=request_headers) as response,
        ):

            async def messages() -> AsyncIterator[dict[str, Any]]:
                if response.headers.get("content-type", "").startswith("application/json"):
                    yield json.loads(await response.aread())  # an error before the stream
                    return
                async for line in response.aiter_lines():
                    if line.startswith("data:") and line[5:].strip():
                        yield json.loads(line[5:])

            yield payload["id"], messages()

    def _request(
        self,
        method: str,
        params: dict[str, Any] | None,
        declare_tasks: bool,
        headers: dict[str, str] | None,
    ) -> tuple[dict[str, str], dict[str, Any]]:
        capabilities: dict[str, Any] = {"elicitation": {}}
        if declare_tasks:
            capabilities["extensions"] = {TASKS: {}}
        body_params = dict(params or {})
        body_params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
            **body_params.get("_meta", {}),
        }
        name = body_params.get("taskId", body_params.get("name"))
        request_headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
            "Mcp-Method": method,
        }
        if isinstance(name, str) and name.isascii() and len(name) < 4000:
            request_headers["Mcp-Name"] = name
        if self._bearer:
            request_headers["Authorization"] = f"Bearer {self._bearer}"
        request_headers.update(headers or {})
        payload = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": body_params}
        return request_headers, payload

    async def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The request's result, asking again while Temporal is too busy to answer.

        As a client does (``fastmcp_temporal.client`` too): a ``-32001`` "Temporal
        did not answer in time" that says asking again is safe is asked again, for
        up to ``BUSY_PATIENCE_S``. Any other error fails the test. ``call`` sends
        exactly once, for tests of the answer itself.
        """
        deadline = asyncio.get_running_loop().time() + BUSY_PATIENCE_S
        while True:
            status, body = await self.call(method, params)
            if not _busy(body) or asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.2)
        assert "result" in body, f"{method} failed with HTTP {status}: {body}"
        return body["result"]


#: How long ``RawMcp.result`` asks again while Temporal is busy.
BUSY_PATIENCE_S = 30.0


def _busy(body: dict[str, Any]) -> bool:
    """Temporal too busy to answer, and asking again is safe (``server.protocol.temporal_busy``)."""
    error = body.get("error") or {}
    return (
        error.get("code") == TEMPORAL_UNAVAILABLE
        and str(error.get("message", "")).startswith("Temporal did not answer in time")
        and (error.get("data") or {}).get("retryable") is True
    )


def _parse(response: httpx.Response) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if "id" in message:
                    return message
        raise AssertionError(f"no response in event stream: {response.text!r}")
    return response.json()
