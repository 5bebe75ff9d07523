"""What the recorded paths (``paths.py``) share: servers, a raw-wire client, helpers.

Each path gets its own FastMCP server with ``TemporalTasks`` on its own task queue
(an in-process worker) and drives its task over the raw 2026-07-28 wire
(``tools/call``, ``tasks/get|update|cancel``), with no client library in between.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.tools.base import Tool
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowExecutionStatus

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from tests.ports import run_server_async
from tests.wire import RawMcp

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}


@dataclass(frozen=True)
class Run:
    """One workflow run to record: the latest run unless ``run_id`` is given."""

    workflow_id: str
    run_id: str | None = None


class Wire:
    """The client half of SEP-2663 over the raw wire: no client library in between."""

    def __init__(self, raw: RawMcp) -> None:
        self.raw = raw

    async def start(self, tool: str, arguments: dict[str, Any] | None = None) -> str:
        result = await self.raw.result("tools/call", {"name": tool, "arguments": arguments or {}})
        assert result["resultType"] == "task", result
        return str(result["taskId"])

    async def wait(
        self, task_id: str, until: Callable[[dict[str, Any]], bool], timeout: float = 60
    ) -> dict[str, Any]:
        """Poll ``tasks/get`` until ``until(task)`` holds."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            task = await self.raw.result("tasks/get", {"taskId": task_id})
            if until(task):
                return task
            assert asyncio.get_running_loop().time() < deadline, f"task stuck at {task}"
            await asyncio.sleep(0.05)

    async def wait_status(self, task_id: str, status: str, timeout: float = 60) -> dict[str, Any]:
        return await self.wait(task_id, lambda task: task["status"] == status, timeout)

    async def answer(self, task_id: str, responses: dict[str, Any]) -> None:
        await self.raw.result("tasks/update", {"taskId": task_id, "inputResponses": responses})

    async def cancel(self, task_id: str) -> None:
        await self.raw.result("tasks/cancel", {"taskId": task_id})


@dataclass
class Harness:
    """What every path gets: clients of the recording dev server."""

    client: TemporalClient
    encrypted_client: TemporalClient

    def tasks(
        self,
        *,
        encrypted: bool = False,
        client: TemporalClient | None = None,
        task_queue: str | None = None,
        **options: Any,
    ) -> TemporalTasks:
        """An extension on ``task_queue`` (default: a queue of its own) through ``client``
        (default: the recording client, sealing with the test key if ``encrypted``)."""
        return TemporalTasks(
            client=client or (self.encrypted_client if encrypted else self.client),
            task_queue=task_queue or new_queue(),
            **options,
        )

    @asynccontextmanager
    async def serve(
        self, extension: TemporalTasks, *tools: Callable[..., Any] | Tool
    ) -> AsyncIterator[Wire]:
        """A server with ``tools`` as task tools (a ``Tool``, e.g. a workflow tool, as is)."""
        mcp = FastMCP("recorder")
        mcp.add_extension(extension)
        for tool in tools:
            if isinstance(tool, Tool):
                mcp.add_tool(tool)
            else:
                mcp.tool(task=True)(tool)
        async with run_server_async(mcp) as url:
            yield Wire(RawMcp(url))

    async def wait_closed(self, workflow_id: str, timeout: float) -> WorkflowExecutionStatus:
        """Wait until Temporal itself closed the workflow (no client involved)."""
        handle = self.client.get_workflow_handle(workflow_id)
        deadline = asyncio.get_running_loop().time() + timeout
        while (status := (await handle.describe()).status) == WorkflowExecutionStatus.RUNNING:
            assert asyncio.get_running_loop().time() < deadline, f"{workflow_id} still running"
            await asyncio.sleep(0.5)
        assert status is not None
        return status


Drive = Callable[[Harness], Awaitable[dict[str, Run]]]


@dataclass(frozen=True)
class TaskPath:
    """One path a task can take: how to drive it, and the history files it writes."""

    name: str
    drive: Drive
    #: The history files this path writes (``<file>.json``).
    files: tuple[str, ...]
    encrypted: bool = False
    #: The disk payload store its histories refer to (a directory next to
    #: them, relative to ``tests/histories``): replaying them needs its blobs.
    payload_store: str | None = None


def new_queue() -> str:
    return f"replay-{uuid4().hex[:12]}"


def wid(task_id: str) -> str:
    return workflow_id_for(task_id, None)


def question(key: str, message: str) -> dict[str, mcp_types.ElicitRequest]:
    return {
        key: mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(
                message=message, requested_schema=ANSWER_SCHEMA
            )
        )
    }


def answers(ctx: Context) -> dict[str, str]:
    return {
        key: str(response.content["answer"])
        for key, response in (ctx.input_responses or {}).items()
        if isinstance(response, mcp_types.ElicitResult) and response.content
    }


def accept(answer: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"answer": answer}}


def text(task: dict[str, Any]) -> str:
    return str(task["result"]["content"][0]["text"])
