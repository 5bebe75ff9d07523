"""Parked tasks: they cost no worker slot, and their TTL ends the wait."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import mcp_types
from fastmcp import Client, Context, FastMCP
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import call_tool_task
from tests.helpers import declares_elicitation


def question() -> mcp_types.InputRequiredResult:
    return mcp_types.InputRequiredResult(
        input_requests={
            "ok": mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message="OK?",
                    requested_schema={"type": "object", "properties": {}},
                )
            )
        }
    )


async def test_parked_tasks_hold_no_running_activity(
    temporal_tasks: Callable[..., TemporalTasks], temporal_client: TemporalClient
) -> None:
    mcp = FastMCP("parked")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def ask(ctx: Context) -> str:
        return question() if not ctx.input_responses else "done"  # type: ignore[return-value]

    async with Client(mcp, elicitation_handler=declares_elicitation) as client:
        tasks = await asyncio.gather(*(call_tool_task(client, "ask", {}) for _ in range(20)))
        await asyncio.gather(*(task.wait(state="input_required", timeout=30) for task in tasks))
        for task in tasks:
            description = await temporal_client.get_workflow_handle(
                f"mcp-anon-{task.task_id}"
            ).describe()
            assert not description.raw_description.pending_activities
    # Leaving the client shuts the worker down with 20 tasks parked: nothing to drain.


async def test_a_task_parked_past_its_ttl_fails_with_a_clear_message(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    """The TTL must outlast the first leg (else the leg's own expiry is the message), which
    a loaded machine can take seconds to dispatch and run; a pass waits the whole TTL."""
    mcp = FastMCP("ttl")
    mcp.add_extension(temporal_tasks(ttl_ms=10_000))

    @mcp.tool(task=True)
    async def ask(ctx: Context) -> str:
        return question() if not ctx.input_responses else "done"  # type: ignore[return-value]

    async with Client(mcp, elicitation_handler=declares_elicitation) as client:
        task = await call_tool_task(client, "ask", {}, raise_on_error=False)
        assert task.create_result.ttl_ms == 10_000
        await task.wait(state="input_required", timeout=30)
        final = await task.wait(timeout=30)
    assert final.status == "failed"
    assert final.error == {
        "code": -32000,
        "message": "Task expired: no answer to its input requests within its TTL (10000 ms)",
    }
    assert final.status_message == final.error["message"]
