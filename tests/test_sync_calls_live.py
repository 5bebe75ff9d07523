"""Bodies that need the live request stay inline for a client that did not opt in.

A tool written for inline calls that asks imperatively (``ctx.elicit()``) kept
working when durable synchronous calls became the default: a FastMCP
``Client`` with an elicitation handler gets what it got before (on 2025-11-25
the question; on 2026-07-28 FastMCP's own error, imperative questions do not
exist there), and no workflow is started. A body that only *mentions* such a
call (a docstring, a string) is still durable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_context
from fastmcp.tools.function_tool import FunctionTool
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.server.protocol.live_request import needs_live_request
from tests.ports import run_server_async
from tests.test_sync_calls import MODES, PlainClient, count_workflows, workflows

BuildTasks = Callable[..., TemporalTasks]


async def asks(ctx: Context) -> str:
    answer = await ctx.elicit("Your name?", str)
    return f"hello {answer.data}" if answer.action == "accept" else "no name"  # type: ignore[union-attr]


async def reads_session(context: Context) -> str:
    return type(context.session).__name__


async def via_get_context() -> str:
    ctx = get_context()
    roots = await ctx.list_roots()
    return str(len(roots))


async def mentions(ctx: Context) -> str:
    """Would call ``ctx.elicit()``, but does not."""
    return "ctx.elicit is only a word here"


@pytest.mark.parametrize(
    ("fn", "live"),
    [(asks, True), (reads_session, True), (via_get_context, True), (mentions, False)],
)
def test_what_needs_the_live_request(fn: Callable[..., Any], live: bool) -> None:
    assert needs_live_request(FunctionTool.from_function(fn)) is live


@pytest.mark.parametrize("mode", MODES)
async def test_an_imperative_question_still_reaches_the_client(
    temporal_tasks: BuildTasks, mode: str, temporal_client: TemporalClient, task_queue: str
) -> None:
    mcp = FastMCP("live")
    mcp.add_extension(temporal_tasks())
    mcp.tool(task=True)(asks)
    mcp.tool(task=True)(mentions)

    async def answer(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return "Ada"

    async with (
        run_server_async(mcp) as url,
        PlainClient(url, mode=mode, elicitation_handler=answer) as client,  # type: ignore[arg-type]
    ):
        if mode == "legacy":
            assert (await client.call_tool("asks", {})).data == "hello Ada"
        else:  # inline, 2026-07-28 has no server-initiated requests: FastMCP's own error
            with pytest.raises(ToolError, match="unavailable on 2026-07-28"):
                await client.call_tool("asks", {})
        await asyncio.sleep(1)
        assert await workflows(temporal_client, task_queue) == []  # inline, as before
        assert (await client.call_tool("mentions", {})).data == "ctx.elicit is only a word here"
    assert await count_workflows(temporal_client, task_queue, 1) == 1
