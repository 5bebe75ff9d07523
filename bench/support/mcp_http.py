"""Spec clients over streamable HTTP for the benchmarks: raw 2026-07-28 JSON-RPC.

What a client that follows SEP-2663 sends, without the FastMCP ``Client`` in
between: a polling client that sleeps each answer's ``pollIntervalMs`` between
``tasks/get``s, and a listening client that opens ``subscriptions/listen`` for
the task it just created and is done at the ``notifications/tasks`` frame that
says the task finished (that frame carries the result: no read follows).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

PROTOCOL = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
TERMINAL = ("completed", "failed", "cancelled")


class McpHttp:
    """Raw JSON-RPC requests to one MCP endpoint over a shared ``httpx`` pool."""

    def __init__(self, url: str, http: httpx.AsyncClient) -> None:
        self.url, self.http, self._ids = url, http, itertools.count(1)

    def _request(
        self,
        method: str,
        params: dict[str, Any],
        declare_tasks: bool = True,
        meta: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], dict[str, str]]:
        params = dict(params)
        capabilities: dict[str, Any] = {"extensions": {TASKS: {}}} if declare_tasks else {}
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
            **(meta or {}),
        }
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
            "Mcp-Method": method,
        }
        name = params.get("taskId", params.get("name"))
        if isinstance(name, str):
            headers["Mcp-Name"] = name
        body = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        return body, headers

    async def result(
        self,
        method: str,
        params: dict[str, Any],
        *,
        declare_tasks: bool = True,
        meta: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One request; its JSON-RPC result (an error raises).

        ``declare_tasks=False``: a client without the tasks extension, as most hosts are.
        ``meta``: more ``_meta`` entries (e.g. a ``progressToken``).
        """
        body, headers = self._request(method, params, declare_tasks, meta)
        response = await self.http.post(self.url, json=body, headers=headers)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            lines = [line for line in response.text.splitlines() if line.startswith("data:")]
            message = json.loads(lines[-1][5:])
        else:
            message = response.json()
        if "result" not in message:
            raise RuntimeError(f"{method}: {message}")
        return message["result"]

    @contextlib.asynccontextmanager
    async def listen(self, task_id: str) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """``subscriptions/listen`` for one task: its frames, as they arrive."""
        body, headers = self._request(
            "subscriptions/listen", {"notifications": {"taskIds": [task_id]}}
        )
        async with self.http.stream("POST", self.url, json=body, headers=headers) as response:

            async def frames() -> AsyncIterator[dict[str, Any]]:
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        yield json.loads(line[5:])

            yield frames()

    async def listen_until_finished(self, task_id: str) -> dict[str, Any]:
        """``subscriptions/listen`` for one task; the first frame that shows it finished."""
        async with self.listen(task_id) as frames:
            async for frame in frames:
                params = frame.get("params", {})
                if frame.get("method") == "notifications/tasks" and params["status"] in TERMINAL:
                    return params
        raise RuntimeError(f"listen stream for {task_id} ended before the task finished")
