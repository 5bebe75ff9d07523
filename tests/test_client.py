"""``fastmcp_temporal.client``: a plain ``fastmcp.Client`` drives tasks on FastMCP 4.1 and 4.2.

Every client here declares ``TasksClientExtension`` itself, so these tests
exercise this package's client half on both lines (an extension a ``Client`` is
given wins over one a companion package registers, such as the peer's on 4.1).
The last test drives the same server with the peer's own client half, where
the peer exists.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import mcp_types
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.exceptions import ToolError

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import (
    CreatedTask,
    TasksClientExtension,
    ToolTask,
    call_tool_task,
    get_task,
)
from tests.conftest import http_client
from tests.helpers import declares_elicitation, needs_peer

BuildTasks = Callable[..., TemporalTasks]


def _server(temporal_tasks: BuildTasks) -> tuple[FastMCP, asyncio.Event]:
    mcp = FastMCP("client-helper")
    mcp.add_extension(temporal_tasks())
    release = asyncio.Event()

    @mcp.tool(task=True)
    async def add(a: int, b: int) -> int:
        return a + b

    @mcp.tool(task=True)
    async def broken() -> str:
        raise ToolError("it broke")

    @mcp.tool(task=True)
    async def held() -> str:
        await release.wait()
        return "released"

    @mcp.tool(task=True)
    async def confirm(ctx: Context) -> str:
        response = (ctx.input_responses or {}).get("ok")
        if isinstance(response, mcp_types.ElicitResult) and response.action == "accept":
            return f"confirmed: {(response.content or {}).get('why')}"
        return mcp_types.InputRequiredResult(  # type: ignore[return-value]
            input_requests={
                "ok": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message="Sure?",
                        requested_schema={
                            "type": "object",
                            "properties": {"why": {"type": "string"}},
                        },
                    )
                )
            }
        )

    @mcp.tool(task=False)
    def inline() -> str:
        return "inline"

    return mcp, release


async def test_call_tool_finishes_a_task_transparently(temporal_tasks: BuildTasks) -> None:
    mcp, _ = _server(temporal_tasks)
    async with Client(mcp, extensions=[TasksClientExtension()]) as client:
        assert (await client.call_tool("add", {"a": 2, "b": 3})).data == 5
        with pytest.raises(ToolError, match="it broke"):
            await client.call_tool("broken", {})


async def test_a_handle_reports_answers_and_returns_the_result(
    temporal_tasks: BuildTasks,
) -> None:
    mcp, _ = _server(temporal_tasks)
    async with http_client(
        mcp, extensions=[TasksClientExtension()], elicitation_handler=declares_elicitation
    ) as client:
        task = await call_tool_task(client, "confirm", {})
        assert isinstance(task.create_result, CreatedTask)
        assert task.create_result.task_id == task.task_id
        parked = await task.wait(state="input_required", timeout=60)
        (key,) = parked.input_requests or {}
        assert parked.input_requests[key]["method"] == "elicitation/create"
        await task.answer({key: mcp_types.ElicitResult(action="accept", content={"why": "yes"})})
        result = await task.result(timeout=30)
        assert result.data == "confirmed: yes"
        assert (await task.status()).status == "completed"
        # Any connection of the same caller reads the task by its id.
        again = await get_task(client.session, task.task_id)
        assert again.result == (await ToolTask(client, "confirm", task.task_id).status()).result


async def test_a_handle_cancels_and_reports_failure(temporal_tasks: BuildTasks) -> None:
    mcp, _ = _server(temporal_tasks)
    async with Client(mcp, extensions=[TasksClientExtension()]) as client:
        held = await call_tool_task(client, "held", {}, raise_on_error=False)
        await held.cancel()
        assert (await held.wait(timeout=60)).status == "cancelled"
        cancelled = await held.result()
        assert cancelled.is_error and "cancelled" in str(cancelled.content[0])

        broken = await call_tool_task(client, "broken", {})
        failed = await broken.wait(timeout=60)
        assert failed.status == "completed" and failed.result is not None
        assert failed.result["isError"] is True
        with pytest.raises(ToolError, match="it broke"):
            await broken.result()


async def test_result_answers_input_with_the_clients_elicitation_handler(
    temporal_tasks: BuildTasks,
) -> None:
    mcp, _ = _server(temporal_tasks)
    seen: list[str] = []

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        seen.append(message)
        return {"why": "handler"}

    async with Client(
        mcp, extensions=[TasksClientExtension()], elicitation_handler=handler
    ) as client:
        task = await call_tool_task(client, "confirm", {})
        assert (await task.result(timeout=30)).data == "confirmed: handler"
    assert seen == ["Sure?"]


async def test_a_client_without_an_elicitation_handler_learns_why_and_the_task_waits(
    temporal_tasks: BuildTasks,
) -> None:
    """No handler, so no ``elicitation`` capability: the drive stops, the task stays parked."""
    mcp, _ = _server(temporal_tasks)
    async with Client(mcp, extensions=[TasksClientExtension()]) as client:
        task = await call_tool_task(client, "confirm", {})
        with pytest.raises(ToolError, match="no elicitation handler"):
            await task.result(timeout=30)
        parked = await task.status()
        assert parked.status == "input_required" and parked.status_message is not None
        assert "(elicitation)" in parked.status_message
        await task.cancel()


async def test_a_transparent_call_without_a_handler_raises_as_the_peers_client_does(
    temporal_tasks: BuildTasks,
) -> None:
    """``client.call_tool`` on an asking task tool: the same ``ToolError`` as with
    ``fastmcp-tasks``'s client half (``tests/test_peer_parity.py``), not a wait."""
    mcp, _ = _server(temporal_tasks)
    async with Client(mcp, extensions=[TasksClientExtension()]) as client:
        with pytest.raises(ToolError, match="requires input but the client has no elicitation"):
            await client.call_tool("confirm", {})
    # The task stays parked for another client; the test's queue ends with the test.


async def test_a_call_the_server_does_not_task_is_an_error(temporal_tasks: BuildTasks) -> None:
    mcp, _ = _server(temporal_tasks)
    async with Client(mcp, extensions=[TasksClientExtension()]) as client:
        with pytest.raises(ToolError, match="did not run as a task"):
            await call_tool_task(client, "inline", {})


@needs_peer
async def test_the_peers_client_half_drives_these_tasks(temporal_tasks: BuildTasks) -> None:
    """A FastMCP 4.1 user's ``fastmcp_tasks`` client works against ``TemporalTasks`` as is."""
    import fastmcp_tasks

    mcp, _ = _server(temporal_tasks)
    async with Client(mcp) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 1})).data == 2
        task = await fastmcp_tasks.call_tool_task(client, "add", {"a": 20, "b": 22})
        assert (await task.result()).data == 42
