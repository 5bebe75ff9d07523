"""A scripted model API on 127.0.0.1 for a real host: it calls one of our tools, then reports.

    async with ScriptedModel(ToolCall("count_steps", {"steps": 3, "runs": "/tmp/x"})) as model:
        ...  # point the host at model.url

It speaks the APIs the hosts use, streaming as each of them asks:

- the Anthropic Messages API (``POST /v1/messages``), Claude Code's
  (``ANTHROPIC_BASE_URL``), as server-sent events when ``stream`` is set;
- the OpenAI Responses API (``POST /v1/responses``), the Codex CLI's
  (``wire_api = "responses"``), as server-sent events;
- the Gemini API (``POST /v1beta/models/<model>:generateContent``, and
  ``:streamGenerateContent?alt=sse``), the Gemini CLI's (``GOOGLE_GEMINI_BASE_URL``);
- the OpenAI Chat Completions API (``POST /v1/chat/completions``), Cline's and
  Continue's (an OpenAI-compatible provider), as server-sent events when ``stream`` is set.

Every turn is decided by the conversation the host sends (``_decide``): one whose
last turn is a tool result is answered with text that quotes it (``ANSWER_PREFIX`` +
the result), so the host prints what our server returned -- unless the result
contains one of the ``again_when`` phrases (the server's "call it again with the same
arguments", a host's "timed out"), which makes the model call the tool again with the
same arguments, as a model does when told to, up to ``max_calls`` calls in one
conversation. One that offers our tool (as ``mcp__<server>__<tool>``,
``<server>__<tool>``, ``mcp_<server>_<tool>``, or in the namespace ``mcp__<server>``)
is answered with a call of it; anything else (a host's side request) with a short
text. ``requests`` keeps every request body, for a failing test's message;
``results`` every tool result the model was given, in order: what it was told.
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


@dataclass(frozen=True)
class Text:
    """The model's turn: an answer in words."""

    text: str


Turn = ToolCall | Text


@dataclass
class ScriptedModel:
    call: ToolCall
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: A tool result containing one of these makes the model call the tool again.
    again_when: tuple[str, ...] = ()
    max_calls: int = 1
    #: Each tool result the host gave the model, in order.
    results: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.port = free_port()
        self._ids = itertools.count(1)
        app = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/chat/completions", self._chat_completions, methods=["POST"]),
                Route("/v1beta/models/{model_action}", self._gemini, methods=["POST"]),
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

    def _decide(self, offered: str | None, results: list[str], ends_with_result: bool) -> Turn:
        """The model's next turn: ``offered`` is our tool's name in the request (if it
        offers it), ``results`` the tool results of the conversation so far, one a call."""
        if len(results) > len(self.results):
            self.results[:] = results
        if not ends_with_result:
            return self.call if offered is not None else Text("ok")
        result = results[-1]
        again = any(phrase in result for phrase in self.again_when)
        if again and offered is not None and len(results) < self.max_calls:
            return self.call
        return Text(ANSWER_PREFIX + result)

    def _offered(self, names: list[str]) -> str | None:
        """The name under which the host offers our tool, if it does."""
        tool = self.call.tool
        suffixes = (f"__{tool}", f"_{tool}")
        return next((name for name in names if name == tool or name.endswith(suffixes)), None)

    # -- Anthropic Messages API (Claude Code) ------------------------------------------------

    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        turn = next(self._ids)
        messages = body.get("messages") or [{}]
        results = [
            _text_of(block.get("content", ""))
            for message in messages
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        last = messages[-1].get("content")
        ends_with_result = isinstance(last, list) and any(
            block.get("type") == "tool_result" for block in last
        )
        ours = self._offered([tool.get("name", "") for tool in body.get("tools", [])])
        decided = self._decide(ours, results, ends_with_result)
        if isinstance(decided, Text):
            block = {"type": "text", "text": decided.text}
        else:
            block = {
                "type": "tool_use",
                "id": f"toolu_{turn}",
                "name": ours,
                "input": decided.arguments,
            }
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
        return _named_events(
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
        items = body.get("input") if isinstance(body.get("input"), list) else [{}]
        results = [
            _text_of(item.get("output", ""))
            for item in items
            if item.get("type") == "function_call_output"
        ]
        ends_with_result = bool(items) and items[-1].get("type") == "function_call_output"
        offered = dict(_responses_functions(body.get("tools", [])))
        ours = self._offered(list(offered))
        decided = self._decide(ours, results, ends_with_result)
        if isinstance(decided, Text):
            item = _responses_text(turn, decided.text)
        else:
            item = {
                "type": "function_call",
                "id": f"fc_{turn}",
                "call_id": f"call_{turn}",
                "name": ours,
                "arguments": json.dumps(decided.arguments),
            }
            if offered[ours] is not None:
                item["namespace"] = offered[ours]
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        return _named_events(
            {"type": "response.created", "response": {"id": f"resp_{turn}"}},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {"id": f"resp_{turn}", "usage": usage}},
        )

    # -- Gemini API (Gemini CLI) -------------------------------------------------------------

    async def _gemini(self, request: Request) -> Response:
        """``<model>:generateContent``, ``:streamGenerateContent`` (SSE), ``:countTokens``."""
        body = await request.json()
        self.requests.append(body)
        model, _, action = request.path_params["model_action"].partition(":")
        if action == "countTokens":
            return JSONResponse({"totalTokens": 10})
        contents = body.get("contents") or [{}]
        responses = [
            part["functionResponse"].get("response", {})
            for content in contents
            for part in content.get("parts", [])
            if "functionResponse" in part
        ]
        results = [_gemini_result_text(response) for response in responses]
        ends_with_result = any("functionResponse" in part for part in contents[-1].get("parts", []))
        declared = [
            declaration.get("name", "")
            for tool in body.get("tools", [])
            for declaration in tool.get("functionDeclarations", [])
        ]
        ours = self._offered(declared)
        decided = self._decide(ours, results, ends_with_result)
        if isinstance(decided, Text):
            part: dict[str, Any] = {"text": decided.text}
        else:
            part = {"functionCall": {"name": ours, "args": decided.arguments}}
        answer = {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": model,
        }
        if action == "streamGenerateContent":
            return _data_events(answer)
        return JSONResponse(answer)

    # -- OpenAI Chat Completions API (Cline, Continue) ---------------------------------------

    async def _chat_completions(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        turn = next(self._ids)
        messages = body.get("messages") or [{}]
        results = [_text_of(m.get("content") or "") for m in messages if m.get("role") == "tool"]
        ends_with_result = messages[-1].get("role") == "tool"
        names = [tool.get("function", {}).get("name", "") for tool in body.get("tools", [])]
        ours = self._offered(names)
        decided = self._decide(ours, results, ends_with_result)
        if isinstance(decided, Text):
            delta: dict[str, Any] = {"role": "assistant", "content": decided.text}
            finish = "stop"
        else:
            function = {"name": ours, "arguments": json.dumps(decided.arguments)}
            call = {"index": 0, "id": f"call_{turn}", "type": "function", "function": function}
            delta = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        completion = {"id": f"chatcmpl-{turn}", "created": 0, "model": body.get("model")}
        if not body.get("stream"):
            message = {key: value for key, value in delta.items()}
            if "tool_calls" in message:
                message["tool_calls"] = [
                    {k: v for k, v in call.items() if k != "index"}
                    for call in message["tool_calls"]
                ]
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return JSONResponse(
                completion | {"object": "chat.completion", "choices": [choice], "usage": usage}
            )
        chunk = completion | {"object": "chat.completion.chunk"}
        return _data_events(
            chunk | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            chunk
            | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage},
            done=True,
        )


def _named_events(*events: dict[str, Any]) -> Response:
    """Server-sent events, each named by its ``type`` as the Anthropic and Responses APIs do."""
    stream = "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events)
    return Response(stream, media_type="text/event-stream")


def _data_events(*events: dict[str, Any], done: bool = False) -> Response:
    """Server-sent events of data alone, as the Gemini and Chat Completions APIs send them;
    Chat Completions ends its stream with ``[DONE]``."""
    stream = "".join(f"data: {json.dumps(event)}\n\n" for event in events)
    return Response(stream + ("data: [DONE]\n\n" if done else ""), media_type="text/event-stream")


def _text_of(content: Any) -> str:
    """A tool result's text: a string, or the text parts of a list of content blocks."""
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content if isinstance(part, dict))


def _responses_functions(tools: list[dict[str, Any]]) -> Iterator[tuple[str, str | None]]:
    """``(name, namespace)`` of every function offered, namespaces (Codex's MCP servers) opened."""
    for tool in tools:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools", []):
                yield inner.get("name", ""), tool.get("name")
        elif tool.get("name"):
            yield tool["name"], None


def _gemini_result_text(response: dict[str, Any]) -> str:
    """What a ``functionResponse`` says: its ``output``, its ``error``, or its text content."""
    for key in ("output", "error"):
        if isinstance(response.get(key), str):
            return response[key]
    if isinstance(response.get("content"), list):
        return _text_of(response["content"])
    return json.dumps(response)


def _responses_text(turn: int, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "id": f"msg_{turn}",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
