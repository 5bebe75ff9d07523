"""A scripted model API on 127.0.0.1 for a real host: it calls one of our tools, then reports.

    async with ScriptedModel(ToolCall("count_steps", {"steps": 3, "runs": "/tmp/x"})) as model:
        ...  # point the host at model.url

It speaks the two APIs the hosts use, streaming as each of them asks:

- the Anthropic Messages API (``POST /v1/messages``), Claude Code's
  (``ANTHROPIC_BASE_URL``), as server-sent events when ``stream`` is set;
- the OpenAI Responses API (``POST /v1/responses``), the Codex CLI's
  (``wire_api = "responses"``), as server-sent events.

Every turn is decided by the conversation the host sends: one whose last turn is a
tool result is answered with text that quotes it (``ANSWER_PREFIX`` + the result), so
the host prints what our server returned -- unless the result contains one of the
``again_when`` phrases (a timeout, "still working"), which makes the model call the tool
again with the same arguments, as a model does when told to, up to ``max_calls``
calls; one that offers our tool (as
``mcp__<server>__<tool>``, or in the namespace ``mcp__<server>``) is answered
with a call of it; anything else (a host's side request) with a short text.
``requests`` keeps every request body, for a failing test's message.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.ports import free_port

ANSWER_PREFIX = "The tool answered: "


@dataclass(frozen=True)
class ToolCall:
    """The call the model makes: our tool's name on the server, and its arguments."""

    tool: str
    arguments: dict[str, Any]


@dataclass
class ScriptedModel:
    call: ToolCall
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: A tool result containing one of these makes the model call the tool again.
    again_when: tuple[str, ...] = ()
    max_calls: int = 1
    #: Each tool result the host sent back, in order.
    results: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.port = free_port()
        self._ids = itertools.count(1)
        app = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
            ]
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._serving: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> ScriptedModel:
        self._serving = asyncio.create_task(self._server.serve())
        while not self._server.started:
            assert not self._serving.done(), "the scripted model API did not start"
            await asyncio.sleep(0.02)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._server.should_exit = True
        assert self._serving is not None
        await self._serving

    # -- Anthropic Messages API (Claude Code) ------------------------------------------------

    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        turn = next(self._ids)
        result = _anthropic_tool_result(body)
        ours = self._offered([tool.get("name", "") for tool in body.get("tools", [])])
        if self._again(result):
            result = None
        if result is not None:
            block = {"type": "text", "text": ANSWER_PREFIX + result}
        elif ours is not None:
            block = {
                "type": "tool_use",
                "id": f"toolu_{turn}",
                "name": ours,
                "input": self.call.arguments,
            }
        else:
            block = {"type": "text", "text": "ok"}
        stop = "tool_use" if block["type"] == "tool_use" else "end_turn"
        usage = {"input_tokens": 10, "output_tokens": 5}
        message = {
            "id": f"msg_{turn}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return JSONResponse(message)
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = block | {"input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        return _events(
            {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}},
            {"type": "content_block_start", "index": 0, "content_block": start},
            {"type": "content_block_delta", "index": 0, "delta": delta},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage},
            {"type": "message_stop"},
        )

    # -- OpenAI Responses API (Codex) --------------------------------------------------------

    async def _responses(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        turn = next(self._ids)
        result = _responses_tool_result(body)
        offered = dict(_responses_functions(body.get("tools", [])))
        ours = self._offered(list(offered))
        if self._again(result):
            result = None
        if result is not None:
            item = _responses_text(turn, ANSWER_PREFIX + result)
        elif ours is not None:
            item = {
                "type": "function_call",
                "id": f"fc_{turn}",
                "call_id": f"call_{turn}",
                "name": ours,
                "arguments": json.dumps(self.call.arguments),
            }
            if offered[ours] is not None:
                item["namespace"] = offered[ours]
        else:
            item = _responses_text(turn, "ok")
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        return _events(
            {"type": "response.created", "response": {"id": f"resp_{turn}"}},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {"id": f"resp_{turn}", "usage": usage}},
        )

    def _again(self, result: str | None) -> bool:
        """Record ``result``; whether the model calls the tool again instead of answering."""
        if result is None:
            return False
        self.results.append(result)
        retry = any(phrase in result for phrase in self.again_when)
        return retry and len(self.results) < self.max_calls

    def _offered(self, names: list[str]) -> str | None:
        """The name under which the host offers our tool, if it does."""
        tool = self.call.tool
        return next((name for name in names if name == tool or name.endswith(f"__{tool}")), None)


def _events(*events: dict[str, Any]) -> Response:
    """Server-sent events, each named by its ``type`` as both APIs name them."""
    stream = "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events)
    return Response(stream, media_type="text/event-stream")


def _text_of(content: Any) -> str:
    """A tool result's text: a string, or the text parts of a list of content blocks."""
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content if isinstance(part, dict))


def _anthropic_tool_result(body: dict[str, Any]) -> str | None:
    """The tool result the host's last message carries, if it carries one."""
    content = body["messages"][-1].get("content") if body.get("messages") else None
    for block in content if isinstance(content, list) else []:
        if block.get("type") == "tool_result":
            return _text_of(block.get("content", ""))
    return None


def _responses_tool_result(body: dict[str, Any]) -> str | None:
    """The tool output the host's last input item is, if it is one."""
    items = body.get("input")
    last = items[-1] if isinstance(items, list) and items else {}
    return _text_of(last.get("output", "")) if last.get("type") == "function_call_output" else None


def _responses_functions(tools: list[dict[str, Any]]) -> Iterator[tuple[str, str | None]]:
    """``(name, namespace)`` of every function offered, namespaces (Codex's MCP servers) opened."""
    for tool in tools:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools", []):
                yield inner.get("name", ""), tool.get("name")
        elif tool.get("name"):
            yield tool["name"], None


def _responses_text(turn: int, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "id": f"msg_{turn}",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
