"""A task that asks a client for input it never declared fails at once, naming the capability.

The capabilities are the creating request's: a FastMCP ``Client`` declares
``elicitation`` only with an ``elicitation_handler`` (and ``sampling`` only with
a ``sampling_handler``), as MCP Inspector declares no elicitation at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types
from fastmcp import Client, Context, FastMCP

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.activities.input_capabilities import undeclared
from fastmcp_temporal.client import call_tool_task
from tests.helpers import declares_elicitation
from tests.test_parking import question


def asking_server(extension: TemporalTasks) -> FastMCP:
    mcp = FastMCP("asking")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def confirm(ctx: Context) -> str:
        return question() if not ctx.input_responses else "confirmed"  # type: ignore[return-value]

    @mcp.tool(task=True)
    async def ask_model(ctx: Context) -> str:
        if ctx.input_responses:
            return "answered"
        sample = mcp_types.CreateMessageRequest(
            params=mcp_types.CreateMessageRequestParams(
                messages=[
                    mcp_types.SamplingMessage(
                        role="user", content=mcp_types.TextContent(type="text", text="2+2?")
                    )
                ],
                max_tokens=5,
            )
        )
        return mcp_types.InputRequiredResult(input_requests={"sum": sample})  # type: ignore[return-value]

    return mcp


async def test_elicitation_from_a_client_that_did_not_declare_it_fails_the_task(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    async with Client(asking_server(temporal_tasks())) as client:
        task = await call_tool_task(client, "confirm", {}, raise_on_error=False)
        final = await task.wait(timeout=30)
    assert final.status == "failed"
    assert final.error is not None and final.error["code"] == -32021
    assert final.error["data"] == {"requiredCapabilities": {"elicitation": {}}}
    assert "elicitation" in final.error["message"] and "'confirm'" in final.error["message"]


async def test_a_client_that_declared_it_gets_the_question(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    extension = temporal_tasks()
    async with Client(asking_server(extension), elicitation_handler=declares_elicitation) as c:
        task = await call_tool_task(c, "confirm", {})
        parked = await task.wait(state="input_required", timeout=30)
        sampling = await call_tool_task(c, "ask_model", {}, raise_on_error=False)
        refused = await sampling.wait(timeout=30)
        await task.cancel()
    assert parked.input_requests is not None and list(parked.input_requests) == ["1.ok"]
    assert refused.status == "failed" and refused.error is not None
    assert refused.error["data"] == {"requiredCapabilities": {"sampling": {}}}


def test_url_mode_needs_the_url_sub_capability_and_unknown_methods_pass() -> None:
    url_ask: dict[str, Any] = {
        "method": "elicitation/create",
        "params": {"mode": "url", "message": "log in", "url": "https://x", "elicitationId": "e"},
    }
    roots: dict[str, Any] = {"method": "roots/list"}
    assert undeclared({"a": url_ask}, {"elicitation": {}}) == {"elicitation": {"url": {}}}
    assert undeclared({"a": url_ask}, {"elicitation": {"url": {}}}) == {}
    assert undeclared({"a": roots}, {"elicitation": {}}) == {"roots": {}}
    assert undeclared({"a": roots}, None) == {}, "not captured (older tasks): no check"
    assert undeclared({"a": {"method": "x/y"}}, {}) == {}
