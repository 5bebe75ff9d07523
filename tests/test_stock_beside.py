"""A FastMCP server without ``TemporalTasks`` is stock FastMCP, while a task runs beside it.

Nothing of FastMCP's or uvicorn's is reassigned for the process: a leg's
``Progress()`` reports to its task through a copy of the tool made for that leg
(``activities.progress_dependency``), and the drain takes SIGTERM in the signal
table, not by changing uvicorn's classes. So while a ``TemporalTasks`` server runs a
task whose body holds its ``Progress``, a plain server in the same process gets
FastMCP's own ``Progress`` (its in-memory tracker, its class, its methods), and
every attribute of those classes and every name of those modules is the object it
was before either server started.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import fastmcp.server.dependencies
import fastmcp.tools.function_tool
import uvicorn
from fastmcp import Client, FastMCP
from fastmcp.dependencies import Progress

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import call_tool_task
from tests.test_task_context import wait_for_status_message

BuildTasks = Callable[..., TemporalTasks]

#: The classes and modules a process-wide patch would reach.
WATCHED: dict[str, Any] = {
    "Progress": Progress,
    "InMemoryProgress": fastmcp.server.dependencies.InMemoryProgress,
    "FunctionTool": fastmcp.tools.function_tool.FunctionTool,
    "uvicorn.Server": uvicorn.Server,
    "uvicorn.Config": uvicorn.Config,
    "fastmcp.server.dependencies": fastmcp.server.dependencies,
    "fastmcp.tools.function_tool": fastmcp.tools.function_tool,
    "uvicorn.server": sys.modules["uvicorn.server"],
}


def identities() -> dict[str, dict[str, int]]:
    """Each watched class's or module's own names, each with the id of what it holds."""
    return {
        label: {name: id(value) for name, value in vars(owner).items()}
        for label, owner in WATCHED.items()
    }


def changed(before: dict[str, dict[str, int]]) -> dict[str, list[str]]:
    now = identities()
    return {
        label: sorted(
            name
            for name in before[label].keys() | now[label].keys()
            if before[label].get(name) != now[label].get(name)
        )
        for label in WATCHED
        if before[label] != now[label]
    }


async def test_a_plain_server_beside_a_running_task_keeps_fastmcps_own_progress(
    temporal_tasks: BuildTasks,
) -> None:
    ours = FastMCP("with-tasks")
    ours.add_extension(temporal_tasks())
    release = asyncio.Event()

    @ours.tool(task=True)
    async def index(progress: Progress = Progress()) -> str:  # noqa: B008
        await progress.set_total(10)
        await progress.increment(3)
        await progress.set_message("indexing in a task")
        await release.wait()
        return f"{type(progress).__module__}.{type(progress).__name__} {progress.current}"

    plain = FastMCP("plain")

    @plain.tool
    async def count(progress: Progress = Progress()) -> dict[str, Any]:  # noqa: B008
        await progress.set_total(5)
        await progress.increment(2)
        await progress.set_message("counting, stock")
        return {
            "type": f"{type(progress).__module__}.{type(progress).__name__}",
            "current": progress.current,
            "total": progress.total,
            "message": progress.message,
        }

    async with Client(plain) as stock:
        # FastMCP's own lazy state (whether Docket is installed, ...) settles at a first
        # stock call; what is compared is what changes after it, from before our
        # server's lifespan starts.
        warm = (await stock.call_tool("count", {})).data
        before = identities()
        async with Client(ours) as with_tasks:
            task = await call_tool_task(with_tasks, "index", {})
            try:
                await wait_for_status_message(task, "indexing in a task")
                during = changed(before)
                first = (await stock.call_tool("count", {})).data
                second = (await stock.call_tool("count", {})).data
                # The plain call's reports went nowhere near the task.
                assert (await task.status()).status_message == "indexing in a task"
            finally:
                release.set()
            result = await task.result()

    stock_progress = {
        "type": "fastmcp.server.dependencies.Progress",
        "current": 2,  # a fresh in-memory tracker per call, as FastMCP makes it
        "total": 5,
        "message": "counting, stock",
    }
    assert warm == first == second == stock_progress
    assert during == {} and changed(before) == {}
    # Ours did report to its leg, as before.
    assert result.data == "fastmcp_temporal.activities.progress_dependency.LegBoundProgress 3"
