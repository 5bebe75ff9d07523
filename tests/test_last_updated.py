"""``lastUpdatedAt`` and ``statusMessage`` as SEP-2663 defines them.

``lastUpdatedAt`` is "when the task was last updated": when what ``tasks/get``
shows last changed. Progress messages are part of that (they are the working
task's ``statusMessage``), the leg's routine heartbeats are not. A finished
task's ``statusMessage`` is about how it ended, never the last progress line.
Real server over streamable HTTP, real worker, the session's Temporal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from fastmcp import Context, FastMCP

from fastmcp_temporal import TemporalTasks, workflow_tool
from tests.ports import run_server_async
from tests.processes.agent_workflows import GreeterAgent, logged_step
from tests.raw_tasks import WITHIN_S, create, wait_for
from tests.wire import RawMcp

BuildTasks = Callable[..., TemporalTasks]
#: Longer than the leg's heartbeat interval (1 s): polls this far apart see a heartbeat between.
ACROSS_A_HEARTBEAT_S = 1.5


def at(task: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(task["lastUpdatedAt"])


async def until_message(raw: RawMcp, task_id: str, message: str) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WITHIN_S
    while True:
        task = await raw.result("tasks/get", {"taskId": task_id})
        if task.get("statusMessage") == message:
            return task
        assert loop.time() < deadline, f"never showed {message!r}: {task}"
        await asyncio.sleep(0.05)


async def test_last_updated_at_moves_with_the_status_message_and_only_then(
    temporal_tasks: BuildTasks,
) -> None:
    steps = [asyncio.Event(), asyncio.Event()]
    mcp = FastMCP("progressing")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def two_steps(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "step 1 of 2")
        await asyncio.wait_for(steps[0].wait(), 30)
        await ctx.report_progress(2, 2, "step 2 of 2")
        await asyncio.wait_for(steps[1].wait(), 30)
        return "both steps done"

    try:
        async with run_server_async(mcp) as url:
            raw = RawMcp(url)
            task_id = await create(raw, "two_steps")
            created = await raw.result("tasks/get", {"taskId": task_id})
            first = await until_message(raw, task_id, "step 1 of 2")
            await asyncio.sleep(ACROSS_A_HEARTBEAT_S)
            unchanged = await raw.result("tasks/get", {"taskId": task_id})
            steps[0].set()
            second = await until_message(raw, task_id, "step 2 of 2")
            steps[1].set()
            final = await wait_for(raw, task_id, "completed")
    finally:
        for step in steps:
            step.set()

    assert at(created) <= at(first), (created, first)
    assert datetime.fromisoformat(first["createdAt"]) < at(first)
    assert unchanged["statusMessage"] == "step 1 of 2"
    assert at(unchanged) == at(first), "a heartbeat without a change moved lastUpdatedAt"
    assert at(first) < at(second)
    assert at(second) <= at(final)
    assert final.get("statusMessage") != "step 2 of 2", final
    assert final["result"]["structuredContent"] == {"result": "both steps done"}


async def test_a_finished_task_does_not_keep_its_last_progress_message(
    temporal_tasks: BuildTasks, tmp_path: Path
) -> None:
    """A workflow tool's progress lines are its ``statusMessage`` while it works; once
    it completed or was cancelled, the last one ("greeting Ada") is no longer shown."""
    mcp = FastMCP("greeter")
    mcp.add_extension(temporal_tasks())
    mcp.add_tool(workflow_tool(GreeterAgent, activities=[logged_step]))
    name = {"action": "accept", "content": {"name": "Ada"}}

    async with run_server_async(mcp) as url:
        raw = RawMcp(url)
        held, released = tmp_path / "held", tmp_path / "released"
        held.mkdir()
        released.mkdir()
        (released / "release").write_text("")
        tasks = {}
        for markers in (held, released):
            task_id = await create(raw, "greeter_agent", {"marker_dir": str(markers)})
            (key,) = (await wait_for(raw, task_id, "input_required"))["inputRequests"]
            await raw.result("tasks/update", {"taskId": task_id, "inputResponses": {key: name}})
            tasks[markers.name] = task_id
        working = await until_message(raw, tasks["held"], "greeting Ada")
        await raw.result("tasks/cancel", {"taskId": tasks["held"]})
        cancelled = await wait_for(raw, tasks["held"], "cancelled")
        completed = await wait_for(raw, tasks["released"], "completed")

    assert working["status"] == "working"
    assert "statusMessage" not in cancelled, cancelled
    assert "statusMessage" not in completed, completed
    assert at(working) <= at(cancelled)
