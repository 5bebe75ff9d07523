"""Raw JSON-RPC over streamable HTTP, and byte-exact views of the JSON it carries.

For ``tests/test_result_parity.py``: ``Wire`` calls a tool with and without the
tasks extension on the stateless 2026-07-28 wire and keeps each response's exact
text (``Message``); ``member`` cuts a value out of that text as a raw slice, never
re-encoded, so two results compare byte for byte; ``without_envelope_stamp``
removes the one member the transport stamps on every response.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID

PROTOCOL = "2026-07-28"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
TASK_DEADLINE_S = 60.0  # a bound on a failure only: a loaded machine runs tasks slowly


@dataclass(frozen=True)
class Message:
    """One JSON-RPC response: its exact text on the wire, and that text parsed."""

    text: str

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.text)


@dataclass
class Wire:
    """Raw JSON-RPC over streamable HTTP against one running server."""

    url: str
    http: httpx.AsyncClient
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    async def request(
        self, method: str, params: dict[str, Any], *, name: str, tasks: bool
    ) -> Message:
        capabilities: dict[str, Any] = {}
        if tasks:
            capabilities["extensions"] = {TASKS_EXTENSION_ID: {}}
        params = {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                "io.modelcontextprotocol/clientInfo": {"name": "parity-test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            },
        }
        body = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        response = await self.http.post(
            self.url,
            json=body,
            headers={
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": PROTOCOL,
                "Mcp-Method": method,
                "Mcp-Name": name,
            },
        )
        return _jsonrpc_response(response)

    async def call_sync(self, tool: str, arguments: dict[str, Any]) -> Message:
        """A plain ``tools/call``: the request does not declare the tasks extension."""
        return await self.request(
            "tools/call", {"name": tool, "arguments": arguments}, name=tool, tasks=False
        )

    async def call_as_task(self, tool: str, arguments: dict[str, Any]) -> tuple[Message, Message]:
        """Create the task and poll it; returns (CreateTaskResult, terminal ``tasks/get``)."""
        created = await self.request(
            "tools/call", {"name": tool, "arguments": arguments}, name=tool, tasks=True
        )
        assert created.data.get("result", {}).get("resultType") == "task", created.text
        task_id = created.data["result"]["taskId"]
        deadline = asyncio.get_running_loop().time() + TASK_DEADLINE_S
        while True:
            got = await self.request("tasks/get", {"taskId": task_id}, name=task_id, tasks=True)
            status = got.data["result"]["status"]
            if status in ("completed", "failed", "cancelled"):
                return created, got
            assert status == "working", got.text
            assert asyncio.get_running_loop().time() < deadline, f"task stuck: {got.text}"
            await asyncio.sleep(0.02)


def _jsonrpc_response(response: httpx.Response) -> Message:
    """The JSON-RPC response: a plain JSON body, or the last SSE ``data:`` frame with an id."""
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        message = Message(response.text)
        # 400 only for the protocol errors that carry it (-32021 in this file).
        assert response.status_code == (400 if "error" in message.data else 200), response.text
        return message
    assert response.status_code == 200, response.text
    frames = [
        line[len("data:") :].strip()
        for line in response.text.splitlines()
        if line.startswith("data:") and line[len("data:") :].strip()
    ]
    answers = [frame for frame in frames if "id" in json.loads(frame)]
    assert answers, response.text
    return Message(answers[-1])


# -- byte-exact views of JSON text ------------------------------------------------

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\r\n"


def _members(text: str) -> dict[str, tuple[str, str]]:
    """Split a JSON object's text into its members, keeping every byte.

    Returns ``{key: (raw key text, raw value text)}`` in wire order: the value
    texts are slices of the original, never re-encoded, so comparing them
    compares what the server actually sent (number spelling, escapes, key
    order, ``null`` versus absent).
    """
    members: dict[str, tuple[str, str]] = {}

    def skip(at: int) -> int:
        while text[at] in _WHITESPACE:
            at += 1
        return at

    at = skip(0)
    assert text[at] == "{", text[:80]
    at = skip(at + 1)
    if text[at] == "}":
        return members
    while True:
        key_start = at
        key, at = _DECODER.raw_decode(text, at)
        raw_key = text[key_start:at]
        at = skip(at)
        assert text[at] == ":"
        value_start = at = skip(at + 1)
        _, at = _DECODER.raw_decode(text, at)
        assert key not in members, f"duplicate key {key!r}"
        members[key] = (raw_key, text[value_start:at])
        at = skip(at)
        if text[at] == "}":
            return members
        assert text[at] == ",", text[at : at + 40]
        at = skip(at + 1)


def _assemble(members: dict[str, tuple[str, str]]) -> str:
    """The inverse of ``_members`` for the compact encoding the server uses."""
    return "{" + ",".join(f"{key}:{value}" for key, value in members.values()) + "}"


def member(text: str, *path: str) -> str:
    """The raw text of ``text[path[0]][path[1]]...``."""
    for key in path:
        members = _members(text)
        # The server writes compact JSON, so re-joining the members reproduces
        # the message byte for byte; this is what makes _assemble trustworthy.
        assert _assemble(members) == text
        text = members[key][1]
    return text


def without_envelope_stamp(result_text: str) -> str:
    """The sync ``tools/call`` result text minus what the transport stamps on *every* response.

    The SDK's runner adds ``_meta["io.modelcontextprotocol/serverInfo"]`` to the
    top-level result of every 2026-07-28 response (``tools/call``, ``tasks/get``,
    ...; ``mcp.server.runner._stamp_server_info``): it describes the *response*,
    not the tool's result. On the task path the same stamp sits on the
    ``tasks/get`` result, not inside the inlined ``result`` (asserted in
    ``_assert_parity``), so it is the one member removed, in place, keeping
    every other byte. A ``_meta`` the stamp created (nothing else in it) goes
    too; any ``_meta`` the *tool* set stays, with its original position and bytes.
    """
    members = _members(result_text)
    if "_meta" in members:
        meta = _members(members["_meta"][1])
        del meta[SERVER_INFO]
        if meta:
            members["_meta"] = (members["_meta"][0], _assemble(meta))
        else:
            del members["_meta"]
    return _assemble(members)
