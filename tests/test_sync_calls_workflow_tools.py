"""A workflow tool called by a client without the tasks extension: a durable synchronous call.

A workflow tool is ``required`` only because it cannot run inline; a durable
synchronous call services it without a ``CreateTaskResult``, so a plain client
gets its result (SEP-2663 R4's ``-32021`` is for requests a server cannot
service that way). Its ``ask()`` is an MRTR round on 2026-07-28 and a live
elicitation on 2025-11-25, one workflow either way. A ``required`` function
tool still answers ``-32021``, and with the switch off so does the workflow tool.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP
from fastmcp.utilities.tasks import TaskConfig
from mcp.shared.exceptions import MCPError
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks, workflow_tool
from fastmcp_temporal.server.protocol.call_progress import LINE_JOIN
from tests.plain_calls import MODES, PlainClient, Progress, count_workflows, progress_sink
from tests.ports import run_server_async
from tests.processes.agent_workflows import (
    GreeterAgent,
    StepLines,
    Stepper,
    logged_step,
    model_turn,
)

BuildTasks = Callable[..., TemporalTasks]


def build(extension: TemporalTasks) -> FastMCP:
    mcp = FastMCP("sync-workflow-tools")
    mcp.add_extension(extension)
    mcp.add_tool(workflow_tool(GreeterAgent, activities=[logged_step]))
    mcp.add_tool(workflow_tool(Stepper))
    mcp.add_tool(workflow_tool(StepLines, activities=[model_turn]))

    @mcp.tool(task=TaskConfig(mode="required"))
    async def only_task() -> str:
        return "a task"

    return mcp


async def answer(message: str, response_type: Any, params: Any, context: Any) -> Any:
    return {"name": "Ada"}


@pytest.mark.parametrize("mode", MODES)
async def test_a_workflow_tool_answers_a_plain_call(
    temporal_tasks: BuildTasks,
    mode: str,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    (tmp_path / "release").write_text("")  # its second step does not wait
    async with (
        run_server_async(build(temporal_tasks())) as url,
        PlainClient(url, mode=mode, elicitation_handler=answer) as client,  # type: ignore[arg-type]
    ):
        result = await client.call_tool("greeter_agent", {"marker_dir": str(tmp_path)})
        assert result.structured_content is not None
        assert result.structured_content["greeting"] == "Hello, Ada!"
        with pytest.raises(MCPError) as refused:
            await client.call_tool_mcp("only_task", {})
        assert refused.value.error.code == -32021
    # The task and the tool's own workflow (its child): one task for the whole exchange.
    assert await count_workflows(temporal_client, task_queue, 2) == 2


async def test_switched_off_a_workflow_tool_is_required_again(temporal_tasks: BuildTasks) -> None:
    async with (
        run_server_async(build(temporal_tasks(durable_sync_calls=False))) as url,
        PlainClient(url) as client,
    ):
        with pytest.raises(MCPError) as refused:
            await client.call_tool_mcp("greeter_agent", {"marker_dir": "unused"})
    assert refused.value.error.code == -32021


@pytest.mark.parametrize("mode", MODES)
async def test_a_workflow_tools_progress_reaches_a_plain_call(
    temporal_tasks: BuildTasks, mode: str
) -> None:
    """A workflow tool reports in its own memo (``report_progress``), which the front end
    reads while the call waits (once a second): its reports, two seconds apart, reach the
    client as ``notifications/progress``, in order, numbers included."""
    seen, on_progress = progress_sink()
    async with (
        run_server_async(build(temporal_tasks())) as url,
        PlainClient(url, mode=mode, progress_handler=on_progress) as client,  # type: ignore[arg-type]
    ):
        assert (await client.call_tool("stepper", {"steps": 3})).data == "3 steps"
    assert lines(seen) == ["step 1", "step 2", "step 3"], seen
    assert seen[-1][0] == 3.0 and increasing(seen), seen


@pytest.mark.parametrize("mode", MODES)
async def test_an_agents_step_lines_arrive_coalesced_and_the_last_before_the_result(
    temporal_tasks: BuildTasks, mode: str
) -> None:
    """Three step lines milliseconds apart, two at one number, the last just before the
    workflow returns: a read once a second passes most of them over, and the task's end
    does not carry a workflow tool's last report. Each reaches the call all the same, in
    order, several to a notification (joined by " · "), the last one before the result."""
    seen, on_progress = progress_sink()
    async with (
        run_server_async(build(temporal_tasks())) as url,
        PlainClient(url, mode=mode, progress_handler=on_progress) as client,  # type: ignore[arg-type]
    ):
        assert (await client.call_tool("step_lines", {})).data == "answer 3"
    assert lines(seen) == ["model turn 1", "tool call: lookup", "model turn 2"], seen
    assert increasing(seen), seen


def lines(seen: Progress) -> list[str]:
    """Each line the notifications carried, in order (a notification may carry several)."""
    return [line for _, _, message in seen for line in (message or "").split(LINE_JOIN)]


def increasing(seen: Progress) -> bool:
    return all(a[0] < b[0] for a, b in itertools.pairwise(seen))
