"""How soon a stuck task says so, and how soon a plain call waiting on it ends.

For each mistake of issue 50, on a fresh dev server and one HTTP front end (the
embedded worker in it unless the scenario says otherwise), two calls of the same
tool: a task-augmented one, whose ``tasks/get`` is polled every 0.25 s until its
``statusMessage`` says what fails (time to visible), and a plain one, as a host makes
it, with the default ``stuck_call_timeout_s`` (30 s) unless ``--stuck-after`` says
otherwise (time to its ``-32004``, and the message).

    .venv/bin/python bench/investigations/2026-12-05-stuck-bodies/measure.py
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fastmcp import Client, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp.utilities.tests import run_server_async
from mcp.shared.exceptions import MCPError
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from fastmcp_temporal import (  # noqa: E402
    DevServer,
    McpTasksPlugin,
    TemporalTasks,
    ToolOptions,
    workflow_tool,
)
from fastmcp_temporal.client import (  # noqa: E402
    TasksClientExtension,
    call_tool_task,
    get_task,
)
from tests.plain_calls import PlainClient  # noqa: E402
from tests.processes.stuck_workflows import OrderAgent, SyncRouterAgent  # noqa: E402


def server(extension: TemporalTasks) -> FastMCP:
    mcp = FastMCP("stuck")
    mcp.add_extension(extension)
    mcp.add_tool(workflow_tool(OrderAgent))  # its activity forgotten
    mcp.add_tool(workflow_tool(SyncRouterAgent))

    @mcp.tool(task=TaskConfig(mode="optional"))
    async def crunch(n: int) -> str:
        return f"crunched {n}"

    return mcp


SCENARIOS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "forgotten activity (workflow_tool without activities=)": ("order_agent", {"order": 42}, {}),
    "body workflow task fails every attempt (sync router)": (
        "sync_router_agent",
        {"question": "q"},
        {},
    ),
    "function tool's legs on a queue no worker polls": (
        "crunch",
        {"n": 1},
        {"tools": {"crunch": ToolOptions(task_queue="nobody-polls")}},
    ),
    "no worker at all": ("crunch", {"n": 1}, {"run_worker": False}),
    "a worker that does not serve the tool": ("crunch", {"n": 1}, {"run_worker": False}),
}


async def scenario(
    address: str, queue: str, name: str, stuck_after: float | None
) -> dict[str, Any]:
    tool, arguments, options = SCENARIOS[name]
    extension = TemporalTasks(
        address=address, task_queue=queue, stuck_call_timeout_s=stuck_after, **options
    )
    worker: Worker | None = None
    if name == "a worker that does not serve the tool":
        temporal = await TemporalClient.connect(address)
        worker = Worker(temporal, task_queue=queue, plugins=[McpTasksPlugin(FastMCP("other"))])
    async with run_server_async(server(extension)) as url:
        if worker is not None:
            await worker.__aenter__()
        try:
            async with (
                Client(url, extensions=[TasksClientExtension()]) as tasks,
                PlainClient(url) as plain,
            ):
                began = time.monotonic()
                visible = asyncio.create_task(until_visible(tasks, tool, arguments, began))
                try:
                    await plain.call_tool_mcp(tool, arguments)
                    ended, message = time.monotonic() - began, "(no error)"
                except MCPError as err:
                    ended, message = (
                        time.monotonic() - began,
                        f"{err.error.code} {err.error.message}",
                    )
                seen_after, status = await visible
        finally:
            if worker is not None:
                await worker.__aexit__(None, None, None)
    return {
        "name": name,
        "visible_s": seen_after,
        "status": status,
        "ended_s": ended,
        "error": message,
    }


async def until_visible(
    tasks: Client[Any], tool: str, arguments: dict[str, Any], began: float
) -> tuple[float, str]:
    task = await call_tool_task(tasks, tool, arguments)
    while True:
        state = await get_task(tasks.session, task.task_id)
        message = state.status_message or ""
        if message.startswith(("No worker", "Workflow", "Tool leg", "Activity", "The task")):
            return time.monotonic() - began, message
        await asyncio.sleep(0.25)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stuck-after", type=float, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        dev = await DevServer.start(data_dir=Path(directory), ui=False)
        try:
            rows = []
            for index, name in enumerate(SCENARIOS):
                rows.append(await scenario(dev.address, f"stuck-{index}", name, args.stuck_after))
                print(rows[-1], file=sys.stderr, flush=True)
        finally:
            dev.stop()
    print("| mistake | `statusMessage` says it after | plain call ends after | its error |")
    print("|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['name']} | {row['visible_s']:.1f} s | {row['ended_s']:.1f} s | "
            f"`{row['error']}` |"
        )


if __name__ == "__main__":
    asyncio.run(main())
