"""Durable multi-step rounds: state-only checkpoints, ``Steps``, limits, long tasks.

A tool that returns an ``InputRequiredResult`` with only a ``request_state``
checkpoints: the workflow records the state and runs the next leg at once.
``Steps`` builds on that so each finished step survives a crash.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import mcp_types
from fastmcp import Client, Context, FastMCP
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import DevServer, McpTasksPlugin, Steps, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from tests.helpers import eventually, front_end, kill, spawn_worker
from tests.processes.steps_server import mcp as steps_server


def checkpoint(state: str) -> mcp_types.InputRequiredResult:
    return mcp_types.InputRequiredResult(request_state=state)


async def test_state_only_rounds_run_the_next_leg_at_once(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    mcp = FastMCP("rounds")
    mcp.add_extension(temporal_tasks())
    legs: list[str | None] = []

    @mcp.tool(task=True)
    async def count_to(n: int, ctx: Context) -> int:
        legs.append(ctx.request_state)
        done = int(ctx.request_state or 0)
        if done < n:
            return checkpoint(str(done + 1))  # type: ignore[return-value]
        return done

    async with Client(mcp) as client:
        assert (await client.call_tool("count_to", {"n": 3})).data == 3
    assert legs == [None, "1", "2", "3"]


async def test_too_many_rounds_fail_the_task_with_a_clear_error(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    mcp = FastMCP("bounded")
    mcp.add_extension(temporal_tasks(max_rounds=3))

    @mcp.tool(task=True)
    async def forever(ctx: Context) -> str:
        return checkpoint("again")  # type: ignore[return-value]

    async with Client(mcp) as client:
        task = await call_tool_task(client, "forever", {}, raise_on_error=False)
        final = await task.wait(timeout=30)
    assert final.status == "failed"
    assert final.error is not None and final.error["code"] == -32603
    assert final.status_message == "Task exceeded its limit of 3 rounds"


async def test_long_tasks_continue_as_new_and_keep_their_identity(
    temporal_tasks: Callable[..., TemporalTasks], temporal_client: TemporalClient
) -> None:
    """Many rounds span several workflow runs; the client sees one task throughout."""
    mcp = FastMCP("long")
    mcp.add_extension(temporal_tasks(rounds_per_run=2))

    @mcp.tool(task=True)
    async def walk(ctx: Context) -> int:
        steps = Steps(ctx)
        total = 0
        for i in range(7):
            total += await steps.run(f"step-{i}", lambda i=i: i)
        return total

    async with Client(mcp) as client:
        task = await call_tool_task(client, "walk", {})
        created = task.create_result
        final = await task.wait(timeout=60)
        assert final.status == "completed" and final.result is not None
        assert final.result["structuredContent"] == {"result": 21}
        assert final.created_at == created.created_at
    query = f"WorkflowId = '{_wid(task)}'"
    runs: list[str] = []
    deadline = asyncio.get_running_loop().time() + 60  # visibility is eventually consistent
    while asyncio.get_running_loop().time() < deadline:
        runs = [execution.run_id async for execution in temporal_client.list_workflows(query)]
        if len(runs) >= 4:
            break
        await asyncio.sleep(0.1)
    assert len(runs) >= 4, "the 8 legs ran in runs of at most rounds_per_run=2 legs"


def _wid(task: object) -> str:
    return f"mcp-anon-{task.task_id}"  # type: ignore[attr-defined]


async def test_steps_outside_a_task_simply_run_in_order() -> None:
    mcp = FastMCP("foreground")
    seen: list[str] = []

    @mcp.tool
    async def pipeline(ctx: Context) -> str:
        steps = Steps(ctx)
        a = await steps.run("a", lambda: seen.append("a") or "A")
        b = await steps.run("b", lambda: seen.append("b") or "B")
        return a + b

    async with Client(mcp) as client:
        assert (await client.call_tool("pipeline", {})).data == "AB"
    assert seen == ["a", "b"]


async def test_a_worker_crash_in_step_k_reruns_only_step_k(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """Steps 1..k-1 are durable; only the step that was running when the worker died runs again."""
    process = spawn_worker(temporal_server.address, task_queue, "tests.processes.steps_server")
    try:
        async with Client(front_end(temporal_client, task_queue, steps_server)) as client:
            task = await call_tool_task(client, "three_steps", {"marker_dir": str(tmp_path)})
            await eventually(lambda: (tmp_path / "started-two").exists())
            kill(process)
            (tmp_path / "release").write_text("")
            async with Worker(
                temporal_client, task_queue=task_queue, plugins=[McpTasksPlugin(steps_server)]
            ):
                final = await task.wait(timeout=60)
    finally:
        kill(process)
    assert final.status == "completed" and final.result is not None
    assert final.result["structuredContent"] == {"result": "one+two+three"}
    runs = (tmp_path / "runs.log").read_text().split()
    assert runs == ["one", "two", "two", "three"]
