"""Durable synchronous calls across their life: cancelled, abandoned, asking, retried.

- ``notifications/cancelled`` for the request (a FastMCP ``Client`` cancelling
  its ``call_tool``) ends the task ``cancelled``;
- a connection that drops mid-wait leaves the task running to ``completed``, on
  2026-07-28 (a JSON answer not yet begun) and on 2025-11-25 (the call's SSE
  stream closed, the session left open: no ``notifications/cancelled``);
- a question on 2026-07-28 comes back as MRTR, the client's next round
  delivers the answer to the same task (one workflow), and a second question
  in a later leg takes another round; on 2025-11-25 each question is a live
  elicitation on the open call, answered into the same task;
- a client that cannot answer (2025-11-25 without an elicitation handler,
  2026-07-28 without the capability) gets what an inline call gets, and the
  task is cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import mcp_types
import pytest
from fastmcp import Context, FastMCP
from fastmcp.client.logging import LogMessage
from mcp.shared.exceptions import MCPError
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from tests.plain_calls import PlainClient, task_status, wait_status, workflows
from tests.ports import run_server_async
from tests.wire import RawMcp

BuildTasks = Callable[..., TemporalTasks]
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def ask(key: str, message: str) -> mcp_types.InputRequiredResult:
    return mcp_types.InputRequiredResult(
        input_requests={
            key: mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(message=message, requested_schema=NAME)
            )
        }
    )


def build(extension: TemporalTasks, legs: list[str]) -> FastMCP:
    mcp = FastMCP("sync-lifecycle")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def nap(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "rested"

    async def interview(ctx: Context) -> str:
        """Two questions, each in its own leg."""
        answers = ctx.input_responses or {}
        legs.append(",".join(sorted(answers)))
        first, second = answers.get("first"), answers.get("second")
        if isinstance(second, mcp_types.ElicitResult) and second.content:
            return f"{ctx.request_state}+{second.content['name']}"
        if isinstance(first, mcp_types.ElicitResult) and first.content:
            result = ask("second", "And your pet's name?")
            result.request_state = str(first.content["name"])
            return result  # type: ignore[return-value]
        return ask("first", "Your name?")  # type: ignore[return-value]

    mcp.tool(task=True)(interview)

    @mcp.tool(task=True, timeout=20)  # short: its legs are local
    async def interview_aloud(ctx: Context) -> str:
        """``interview``, saying which leg it is in."""
        await ctx.info(f"leg {len(legs) + 1}")
        return await interview(ctx)

    return mcp


@pytest.fixture
def legs() -> list[str]:
    """The answers each leg of ``interview`` saw."""
    return []


@pytest.fixture
async def url(temporal_tasks: BuildTasks, legs: list[str]) -> AsyncIterator[str]:
    async with run_server_async(build(temporal_tasks(), legs)) as server_url:
        yield server_url


async def test_notifications_cancelled_cancels_the_task(
    url: str, temporal_client: TemporalClient, task_queue: str
) -> None:
    async with PlainClient(url, mode="legacy") as client:
        call = asyncio.create_task(client.call_tool("nap", {"seconds": 60}))
        await wait_status(temporal_client, task_queue, "working")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await wait_status(temporal_client, task_queue, "cancelled")


async def test_a_dropped_connection_leaves_the_task_running(
    url: str, temporal_client: TemporalClient, task_queue: str
) -> None:
    raw = RawMcp(url)
    params = {"name": "nap", "arguments": {"seconds": 6}}
    # A 2026-07-28 POST answered with JSON: nothing arrives before the result, so the
    # client drops the connection while it waits for the response's first byte.
    call = asyncio.create_task(raw.call("tools/call", params, declare_tasks=False))
    await wait_status(temporal_client, task_queue, "working")
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await asyncio.sleep(1)
    assert await task_status(temporal_client, task_queue) == "working"
    await wait_status(temporal_client, task_queue, "completed", timeout=30)


async def test_a_dropped_stream_on_the_handshake_wire_leaves_the_task_running(
    url: str, temporal_client: TemporalClient, task_queue: str
) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-2025", "version": "1"},
    }
    call = {"name": "nap", "arguments": {"seconds": 6}}
    async with httpx.AsyncClient(timeout=30) as http:
        init = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
            headers=headers,
        )
        headers |= {
            "mcp-session-id": init.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        notified = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(url, json=notified, headers=headers)).status_code == 202
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
        stream = await http.send(
            http.build_request("POST", url, json=body, headers=headers), stream=True
        )
        assert stream.headers["content-type"].startswith("text/event-stream")
        await wait_status(temporal_client, task_queue, "working")
        await stream.aclose()  # the call's stream drops unread; the session stays open
        await asyncio.sleep(1)
        assert await task_status(temporal_client, task_queue) == "working"
    await wait_status(temporal_client, task_queue, "completed", timeout=30)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_questions_are_rounds_of_one_task(
    url: str, mode: str, legs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    """2026-07-28: MRTR rounds; 2025-11-25: live elicitations on the open call."""
    asked: list[str] = []

    async def answer(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        return {"name": "Ada" if message == "Your name?" else "Rex"}

    async with PlainClient(url, mode=mode, elicitation_handler=answer) as client:  # type: ignore[arg-type]
        result = await client.call_tool("interview", {})
    assert result.data == "Ada+Rex"
    assert asked == ["Your name?", "And your pet's name?"]
    assert legs == ["", "first", "second"]  # each leg ran once, with its round's answers
    assert len(await workflows(temporal_client, task_queue)) == 1
    assert await task_status(temporal_client, task_queue) == "completed"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_each_legs_log_lines_reach_the_client_once_across_the_rounds(
    url: str, mode: str
) -> None:
    """Each leg's lines reach the client once: a later round (a new MRTR call, or the
    wait after a live answer) does not send the earlier legs' lines again."""
    lines: list[str] = []

    async def answer(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return {"name": "Ada" if message == "Your name?" else "Rex"}

    async def on_log(message: LogMessage) -> None:
        lines.append(message.data["msg"])

    async with PlainClient(
        url, mode=mode, elicitation_handler=answer, log_handler=on_log
    ) as client:  # type: ignore[arg-type]
        assert (await client.call_tool("interview_aloud", {})).data == "Ada+Rex"
    assert lines == ["leg 1", "leg 2", "leg 3"]


async def test_a_question_on_the_handshake_wire_is_fastmcps_error_and_ends_the_task(
    url: str, temporal_client: TemporalClient, task_queue: str
) -> None:
    async with PlainClient(url, mode="legacy") as client:
        with pytest.raises(MCPError) as asked:
            await client.call_tool_mcp("interview", {})
    assert "only exists at MCP 2026-07-28" in asked.value.error.message
    await wait_status(temporal_client, task_queue, "cancelled")


async def test_a_question_the_client_cannot_answer_ends_the_task(
    url: str, temporal_client: TemporalClient, task_queue: str
) -> None:
    """2026-07-28, no ``elicitation`` declared: FastMCP's client error, as inline; no owner left."""
    async with PlainClient(url) as client:
        with pytest.raises(MCPError, match="Elicitation not supported"):
            await client.call_tool("interview", {})
    await wait_status(temporal_client, task_queue, "cancelled")
