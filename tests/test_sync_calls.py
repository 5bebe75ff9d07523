"""Durable synchronous calls (``server.protocol.sync_calls``, issue 27).

A client that does not declare the tasks extension -- a FastMCP ``Client``
without ``TasksClientExtension``, on 2025-11-25 (``mode="legacy"``) and
2026-07-28 (``mode="auto"``), over streamable HTTP -- calls ``task=True`` tools.
Each call runs as the task's workflow on the session's Temporal (the test's own
queue shows it) and answers what the same body answers inline: every durable
tool has a twin switched off with ``ToolOptions(durable_sync_calls=False)``, and
both are compared.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import mcp_types
import pytest
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp import Client as SdkClient
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client_wire import IDEMPOTENCY_KEY_META
from fastmcp_temporal.server.tasks.starter import ToolOptions
from tests.plain_calls import MODES, PlainClient, count_workflows, wire, workflows
from tests.ports import run_server_async

BuildTasks = Callable[..., TemporalTasks]


TWINS = ("report", "fails", "crashes", "refuses", "steps")


class Report(BaseModel):
    topic: str
    pages: int


def tools(mcp: FastMCP, runs: list[str], suffix: str) -> None:
    """The tools under test, registered as ``<name><suffix>`` (one body each)."""

    @mcp.tool(name=f"report{suffix}", task=True)
    async def report(ctx: Context, topic: str, pages: int = 3) -> Report:
        runs.append(f"report{suffix}:{'task' if ctx.is_background_task else 'inline'}")
        return Report(topic=topic, pages=pages)

    @mcp.tool(name=f"fails{suffix}", task=True)
    async def fails() -> str:
        raise ToolError("the archive is closed")

    @mcp.tool(name=f"crashes{suffix}", task=True)
    async def crashes() -> str:
        raise RuntimeError("internal detail")

    @mcp.tool(name=f"refuses{suffix}", task=True)
    async def refuses() -> str:
        raise MCPError(code=-32042, message="not today", data={"why": "closed"})

    @mcp.tool(name=f"steps{suffix}", task=True)
    async def steps(ctx: Context, count: int = 3) -> str:
        for step in range(1, count + 1):
            await ctx.report_progress(step, count, f"step {step}")
            await asyncio.sleep(1.5)  # past the heartbeat throttle: each report is seen
        return "done"


def build(extension: TemporalTasks, runs: list[str], **server: Any) -> FastMCP:
    mcp = FastMCP("sync", **server)
    mcp.add_extension(extension)
    tools(mcp, runs, "")
    tools(mcp, runs, "_inline")

    @mcp.tool(task=False)
    async def plain() -> str:
        return "never a task"

    @mcp.tool(task=True)
    async def outer(ctx: Context) -> str:
        nested = await ctx.fastmcp.call_tool("report", {"topic": "nested"})
        return f"{ctx.is_background_task}:{nested.structured_content}"

    return mcp


def extension(temporal_tasks: BuildTasks, **options: Any) -> TemporalTasks:
    inline = {f"{name}_inline": ToolOptions(durable_sync_calls=False) for name in TWINS}
    return temporal_tasks(tools=inline, **options)


@pytest.fixture
def runs() -> list[str]:
    """Each body run of a ``report`` tool: ``<tool name>:task`` in a task leg, else ``:inline``.

    Where the body ran is the strong signal that a call was (not) durable: the
    workflow list is eventually consistent, a body's own ``is_background_task`` is not.
    """
    return []


@pytest.fixture
async def url(temporal_tasks: BuildTasks, runs: list[str]) -> AsyncIterator[str]:
    served = build(extension(temporal_tasks), runs, mask_error_details=True)
    async with run_server_async(served) as server_url:
        yield server_url


@pytest.mark.parametrize("mode", MODES)
async def test_results_equal_the_inline_ones_and_each_call_is_a_workflow(
    url: str, mode: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    async with PlainClient(url, mode=mode) as client:  # type: ignore[arg-type]
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        for name, arguments in [("report", {"topic": "tides"}), ("fails", {}), ("crashes", {})]:
            durable = await client.call_tool_mcp(name, arguments)
            inline = await client.call_tool_mcp(f"{name}_inline", arguments)
            shown = json.dumps(wire(inline)).replace(f"{name}_inline", name)
            assert wire(durable) == json.loads(shown), name
        typed = await client.call_tool("report", {"topic": "tides", "pages": "7"})
        assert typed.structured_content == {"topic": "tides", "pages": 7}
        # The client builds its own type from the output schema: compare every field.
        assert Report.model_validate(typed.data, from_attributes=True) == Report(
            topic="tides", pages=7
        )
        # A raised MCPError fails a task; the call answers that error (inline FastMCP
        # masks it into an isError result: docs/differences.md).
        with pytest.raises(MCPError) as refused:
            await client.call_tool_mcp("refuses", {})
        assert refused.value.error.code == -32042
        assert refused.value.error.data == {"why": "closed"}
    # report, fails, crashes, refuses, and the typed report: five tasks, no inline twin.
    assert runs == ["report:task", "report_inline:inline", "report:task"]
    assert await count_workflows(temporal_client, task_queue, 5) == 5
    assert all(
        workflow_id.startswith("mcp-")
        for workflow_id in await workflows(temporal_client, task_queue)
    )


@pytest.mark.parametrize("mode", MODES)
async def test_invalid_arguments_are_rejected_before_anything_starts(
    url: str, mode: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    """No workflow for a call FastMCP rejects. Checked behind a fence, not a fixed wait: a
    valid call after them starts one; once it is listed, one of theirs would be too."""
    async with PlainClient(url, mode=mode) as client:  # type: ignore[arg-type]
        durable = await client.call_tool_mcp("report", {"topic": "tides", "pages": "many"})
        inline = await client.call_tool_mcp("report_inline", {"topic": "tides", "pages": "many"})
        assert wire(durable) == wire(inline)  # FastMCP's own validation answer, word for word
        assert durable.is_error
        assert (await client.call_tool("plain", {})).data == "never a task"
        await client.call_tool("report", {"topic": "fence"})
    assert runs == ["report:task"]  # the fence; the rejected calls ran nothing
    assert await count_workflows(temporal_client, task_queue, 1) == 1


async def test_nested_calls_run_inline_inside_the_durable_call(
    url: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    async with PlainClient(url) as client:
        result = await client.call_tool("outer", {})
    # The client's call is a task (its body sees a background task); the tool it calls is not.
    assert result.data == "True:{'topic': 'nested', 'pages': 3}"
    assert runs == ["report:inline"]  # the nested body ran in the outer leg, not in its own
    assert await count_workflows(temporal_client, task_queue, 1) == 1


class FrontDesk(Middleware):
    """Answers a call of ``front_desk`` by calling the ``task=True`` tool ``report`` itself."""

    async def on_call_tool(
        self,
        context: MiddlewareContext[mcp_types.CallToolRequestParams],
        call_next: CallNext[mcp_types.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        if context.message.name != "front_desk" or context.fastmcp_context is None:
            return await call_next(context)
        return await context.fastmcp_context.fastmcp.call_tool("report", {"topic": "desk"})


@pytest.mark.parametrize("mode", MODES)
async def test_a_task_tool_that_middleware_calls_runs_inline(
    temporal_tasks: BuildTasks,
    mode: str,
    runs: list[str],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """Only the tool the client named is the client's call: middleware that calls a
    ``task=True`` tool itself gets it inline, as a tool calling another tool does."""
    mcp = build(extension(temporal_tasks), runs)
    mcp.add_middleware(FrontDesk())

    @mcp.tool(task=False)
    async def front_desk() -> Report:
        raise AssertionError("the middleware answers this call")

    async with run_server_async(mcp) as served, PlainClient(served, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.call_tool_mcp("front_desk", {})
        # A durable call after it: once its workflow is listed, one of the first would be.
        await client.call_tool("report", {"topic": "fence"})
    assert result.structured_content == {"topic": "desk", "pages": 3}
    assert runs == ["report:inline", "report:task"]  # the middleware's call ran in the request
    assert await count_workflows(temporal_client, task_queue, 1) == 1  # the fence only


async def test_the_server_wide_switch_turns_it_off(
    temporal_tasks: BuildTasks, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    mcp = build(temporal_tasks(durable_sync_calls=False), runs)
    async with run_server_async(mcp) as served, PlainClient(served) as client:
        report = await client.call_tool("report", {"topic": "x"})
    assert report.structured_content == {"topic": "x", "pages": 3}
    assert runs == ["report:inline"]  # ran in the request: no task leg ran it
    assert await workflows(temporal_client, task_queue) == []


@pytest.mark.parametrize(
    ("argument", "durable"), [(None, False), (True, True)], ids=["env-alone", "argument-wins"]
)
async def test_the_environment_variable_turns_it_off_unless_the_argument_turns_it_on(
    monkeypatch: pytest.MonkeyPatch,
    temporal_tasks: BuildTasks,
    argument: bool | None,
    durable: bool,
    runs: list[str],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """``FASTMCP_TEMPORAL_DURABLE_SYNC_CALLS=false`` is the server-wide default that
    ``TemporalTasks(durable_sync_calls=...)`` overrides (the settings' precedence)."""
    monkeypatch.setenv("FASTMCP_TEMPORAL_DURABLE_SYNC_CALLS", "false")
    options = {} if argument is None else {"durable_sync_calls": argument}
    mcp = build(temporal_tasks(**options), runs)
    async with run_server_async(mcp) as served, PlainClient(served) as client:
        report = await client.call_tool("report", {"topic": "x"})
    assert report.structured_content == {"topic": "x", "pages": 3}
    assert runs == ["report:task" if durable else "report:inline"]
    assert await count_workflows(temporal_client, task_queue, int(durable)) == int(durable)


@pytest.mark.parametrize("off_by", ["argument", "environment"])
async def test_a_tools_own_switch_makes_it_durable_when_the_server_wide_one_is_off(
    monkeypatch: pytest.MonkeyPatch,
    temporal_tasks: BuildTasks,
    off_by: str,
    runs: list[str],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """``ToolOptions(durable_sync_calls=True)`` wins over the server-wide ``False``
    (``ToolOptions``: ``None`` means the extension's); the other tools stay inline."""
    options: dict[str, Any] = {"tools": {"report": ToolOptions(durable_sync_calls=True)}}
    if off_by == "environment":
        monkeypatch.setenv("FASTMCP_TEMPORAL_DURABLE_SYNC_CALLS", "false")
    else:
        options["durable_sync_calls"] = False
    mcp = build(temporal_tasks(**options), runs)
    async with run_server_async(mcp) as served, PlainClient(served) as client:
        report = await client.call_tool("report", {"topic": "x"})
        outer = await client.call_tool("outer", {})
    assert report.structured_content == {"topic": "x", "pages": 3}
    assert outer.data == "False:{'topic': 'nested', 'pages': 3}"  # `outer` ran inline
    assert runs == ["report:task", "report:inline"]  # the second: `outer`'s nested call
    assert await count_workflows(temporal_client, task_queue, 1) == 1


async def test_an_idempotency_key_attaches_to_the_calls_task(
    url: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    meta = {IDEMPOTENCY_KEY_META: "sync-call-key-1"}
    async with PlainClient(url) as client:
        first = await client.call_tool_mcp("report", {"topic": "once"}, meta=meta)
        again = await client.call_tool_mcp("report", {"topic": "once"}, meta=meta)
    assert wire(first) == wire(again)
    assert runs == ["report:task"]  # the retry read the task's result; the body ran once
    assert await count_workflows(temporal_client, task_queue, 1) == 1


async def test_the_mcp_sdks_own_client_gets_the_inline_result(
    url: str, temporal_client: TemporalClient, task_queue: str
) -> None:
    """The MCP Python SDK's ``Client`` (no FastMCP on the client side), with progress."""
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with SdkClient(url) as client:
        durable = await client.call_tool("report", {"topic": "sdk"})
        inline = await client.call_tool("report_inline", {"topic": "sdk"})
        await client.call_tool("steps", {"count": 2}, progress_callback=on_progress)
    assert wire(durable) == wire(inline)
    assert seen == [1.0, 2.0]
    assert await count_workflows(temporal_client, task_queue, 2) == 2
