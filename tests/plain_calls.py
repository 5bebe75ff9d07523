"""What the tests of durable plain calls share: the host-like client and workflow counts.

A *plain* call is a ``tools/call`` from a client that does not declare the tasks
extension, as hosts (Claude Code, Codex) make them: the server runs it as the
task's workflow while the request waits (``server.protocol.sync_calls``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types
from fastmcp import Client
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowExecutionStatus

from fastmcp_temporal.server.core.visibility import workflow_type
from fastmcp_temporal.workflows.task_workflow import MEMO_KEY

MODES = ["legacy", "auto"]  # 2025-11-25 and 2026-07-28
#: ``(progress, total, message)`` of each ``notifications/progress``, as received.
Progress = list[tuple[float, float | None, str | None]]
ProgressHandler = Callable[[float, float | None, str | None], Awaitable[None]]


class PlainClient(Client):  # type: ignore[type-arg]
    """A FastMCP ``Client`` that declares no tasks extension, as hosts' clients do.

    The suite makes every ``Client`` declare it (``tests/conftest.py``); FastMCP's
    own ``ProxyClient`` turns that off the same way.
    """

    _auto_internal_extensions = False


def progress_sink() -> tuple[Progress, ProgressHandler]:
    """Where a client's ``progress_handler`` puts each report, as received."""
    seen: Progress = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    return seen, on_progress


def wire(result: mcp_types.CallToolResult) -> dict[str, Any]:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


async def workflows(temporal_client: TemporalClient, task_queue: str) -> list[str]:
    """The task workflows started on this test's queue so far (visibility is eventual)."""
    query = f"TaskQueue = '{task_queue}'"
    return [w.id async for w in temporal_client.list_workflows(query)]


async def count_workflows(
    temporal_client: TemporalClient, task_queue: str, expected: int, timeout: float = 10
) -> int:
    """How many workflows the queue has once it reached ``expected`` (or ``timeout`` passed)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = len(await workflows(temporal_client, task_queue))
        if found >= expected or loop.time() > deadline:
            return found
        await asyncio.sleep(0.2)


async def task_status(
    temporal_client: TemporalClient, task_queue: str, tool: str | None = None
) -> str | None:
    """The status the one task (of ``tool``) on this queue last recorded (``None``: none yet)."""
    query = f"TaskQueue = '{task_queue}'"
    if tool is not None:
        query += f" AND WorkflowType = '{workflow_type(tool)}'"
    found = [w.id async for w in temporal_client.list_workflows(query)]
    if not found:
        return None
    (workflow_id,) = found
    description = await temporal_client.get_workflow_handle(workflow_id).describe()
    if description.status == WorkflowExecutionStatus.CANCELED:
        return "cancelled"  # a cancelled task's memo keeps its last state (task_workflow._touch)
    return (await description.memo())[MEMO_KEY]["status"]


async def wait_status(
    temporal_client: TemporalClient,
    task_queue: str,
    status: str,
    timeout: float = 15,
    tool: str | None = None,
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (seen := await task_status(temporal_client, task_queue, tool)) != status:
        assert loop.time() < deadline, f"the task is {seen}, not {status}"
        await asyncio.sleep(0.1)
