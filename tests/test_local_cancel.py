"""A running local leg is cancelled: its task ends ``cancelled`` and its body sees it.

A local leg runs inside a workflow task, so a ``tasks/cancel`` reaches it only
when the SDK completes that task to keep it open (at 80 % of the workflow task
timeout); local-leg tasks therefore start with a short one
(``LOCAL_LEGS_TASK_TIMEOUT``). How soon is measured in
``bench/investigations/2026-12-01-local-cancel``; these tests check what happens
and what each task starts with.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest
from fastmcp import Client, FastMCP

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import ToolTask, call_tool_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.server.tasks.starter import LOCAL_LEGS_TASK_TIMEOUT, ToolOptions

#: Long enough that a leg still running at the end was never cancelled.
LEG_SECONDS = 20.0


async def task_timeout(extension: TemporalTasks, task: ToolTask) -> timedelta:
    """The workflow task timeout the task's workflow was started with."""
    engine = extension.engine
    workflow_id = workflow_id_for(task.task_id, None, engine.scope_secret)
    description = await engine.client.get_workflow_handle(workflow_id).describe()
    config = description.raw_description.execution_config
    return config.default_workflow_task_timeout.ToTimedelta()


async def test_a_local_leg_cancelled_mid_leg_ends_cancelled_and_its_body_sees_it(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    extension = temporal_tasks(tools={"wait_long": ToolOptions(local_legs=True)})
    mcp = FastMCP("local-cancel")
    mcp.add_extension(extension)
    started, saw_cancel, finished = asyncio.Event(), asyncio.Event(), asyncio.Event()

    @mcp.tool(task=True)
    async def wait_long() -> str:
        started.set()
        try:
            await asyncio.sleep(LEG_SECONDS)
        except asyncio.CancelledError:
            saw_cancel.set()
            raise
        finished.set()
        return "finished"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "wait_long", {})
        await asyncio.wait_for(started.wait(), 60)
        await task.cancel()
        final = await task.wait(timeout=60)
        assert final.status == "cancelled"
        await asyncio.wait_for(saw_cancel.wait(), 60)
        assert not finished.is_set()
        assert await task_timeout(extension, task) == LOCAL_LEGS_TASK_TIMEOUT


async def test_tasks_start_with_the_workflow_task_timeout_of_their_tool(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    """Activity legs keep Temporal's default; an explicit timeout wins over the local one."""
    extension = temporal_tasks(
        tools={
            "local": ToolOptions(local_legs=True),
            "local_five": ToolOptions(local_legs=True, workflow_task_timeout=timedelta(seconds=5)),
        }
    )
    mcp = FastMCP("task-timeouts")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def local() -> str:
        return "local"

    @mcp.tool(task=True)
    async def local_five() -> str:
        return "local_five"

    @mcp.tool(task=True)
    async def remote() -> str:
        return "remote"

    expected = {
        "local": LOCAL_LEGS_TASK_TIMEOUT,
        "local_five": timedelta(seconds=5),
        "remote": timedelta(seconds=10),  # Temporal's default
    }
    async with Client(mcp) as client:
        for tool, timeout in expected.items():
            task = await call_tool_task(client, tool, {})
            assert (await task.result()).data == tool
            assert await task_timeout(extension, task) == timeout


@pytest.mark.parametrize("seconds", [0, -1, 121])
def test_a_workflow_task_timeout_out_of_temporals_range_is_refused(seconds: int) -> None:
    with pytest.raises(ValueError, match="workflow_task_timeout"):
        ToolOptions(local_legs=True, workflow_task_timeout=timedelta(seconds=seconds))
