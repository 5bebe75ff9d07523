"""A raw 2025-11-25 streamable HTTP session, as a host's TypeScript SDK speaks it.

``initialize`` with the ``clientInfo`` a test chooses (the server knows hosts by it,
``server.protocol.host_limits``), ``tools/call`` POSTs answered on their SSE streams,
and ``notifications/cancelled`` with any reason, or none -- what the FastMCP
``Client`` cannot be made to send.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from typing import Any

import httpx
from temporalio.client import Client as TemporalClient

from tests.plain_calls import wait_status

HANDSHAKE = "2025-11-25"


class Handshake:
    """A raw 2025-11-25 streamable HTTP session: ``initialize`` with a ``clientInfo``, then
    ``tools/call`` POSTs answered on SSE, and ``notifications/cancelled`` with any reason."""

    def __init__(self, url: str, client_name: str = "raw-host") -> None:
        self.url = url
        self.client_name = client_name
        self._ids = itertools.count(1)
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(60, read=None))
        self._headers = {"Accept": "application/json, text/event-stream"}

    async def __aenter__(self) -> Handshake:
        hello = {
            "protocolVersion": HANDSHAKE,
            "capabilities": {},
            "clientInfo": {"name": self.client_name, "version": "1"},
        }
        init = await self._http.post(
            self.url,
            json={"jsonrpc": "2.0", "id": next(self._ids), "method": "initialize", "params": hello},
            headers=self._headers,
        )
        self._headers |= {
            "mcp-session-id": init.headers["mcp-session-id"],
            "mcp-protocol-version": HANDSHAKE,
        }
        await self.notify("notifications/initialized", None)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._http.aclose()

    async def notify(self, method: str, params: dict[str, Any] | None) -> None:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        response = await self._http.post(self.url, json=body, headers=self._headers)
        assert response.status_code == 202, response.text

    def next_id(self) -> int:
        return next(self._ids)

    async def call(
        self, name: str, arguments: dict[str, Any], request_id: int | None = None
    ) -> dict[str, Any]:
        """The JSON-RPC response to one ``tools/call`` (read from its SSE stream)."""
        request_id = request_id if request_id is not None else self.next_id()
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        request = self._http.build_request("POST", self.url, json=body, headers=self._headers)
        response = await self._http.send(request, stream=True)
        try:
            async for line in response.aiter_lines():
                if line.startswith("data:") and line[5:].strip():
                    message = json.loads(line[5:])
                    if message.get("id") == request_id:
                        return message
        finally:
            await response.aclose()
        raise AssertionError("the call's stream ended without its answer")

    async def cancelled_call(
        self,
        name: str,
        arguments: dict[str, Any],
        reason: str | None,
        temporal_client: TemporalClient,
        task_queue: str,
    ) -> None:
        """Call, wait until its task works, then cancel it with ``reason`` (``None``: none)."""
        request_id = self.next_id()
        calling = asyncio.create_task(self.call(name, arguments, request_id))
        try:
            await wait_status(temporal_client, task_queue, "working")
            params: dict[str, Any] = {"requestId": request_id}
            if reason is not None:
                params["reason"] = reason
            await self.notify("notifications/cancelled", params)
            await asyncio.sleep(1)  # the cancelled request is never answered
        finally:
            calling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await calling
