"""pydantic-ai's durable agent inside one of our workflow tools, both plugins on one worker.

A FastMCP client calls the workflow tool as a task and gets the agent's
output; the agent's model requests and tool calls are activities in the tool
workflow's history, beside our ``ask`` (a signal) and ``report_progress``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.elicitation import ElicitResult
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient
from temporalio.worker import Replayer

from fastmcp_temporal import McpTasksPlugin, TemporalTasks, workflow_tool
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.core.codec import task_data_converter
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.testing import EmbeddedServer
from tests.conftest import http_client
from tests.test_examples import run_to_the_end

pytest.importorskip(
    "pydantic_ai.durable_exec.temporal",
    reason="needs the agents extra: pip install 'fastmcp-temporal[agents]'",
)

from pydantic_ai.durable_exec.temporal import PydanticAIPayloadConverter, PydanticAIPlugin

from examples.pydantic_ai_agent.agent import TriageTicket
from examples.pydantic_ai_agent.server import build


async def approve(message: str, response_type: Any, params: Any, context: Any) -> ElicitResult:
    assert message == "The agent suggests 'escalate: enterprise customer'. Go ahead?"
    return ElicitResult(action="accept", content={"approve": True})


@pytest.mark.parametrize("converter", ["ours", "pydantic-ai's"])
async def test_a_pydantic_ai_agent_runs_durably_inside_a_workflow_tool(
    temporal_client: TemporalClient, task_queue: str, tmp_path: Path, converter: str
) -> None:
    """With our converter (what ``TemporalTasks`` connects with) or pydantic-ai's
    subclass of it (a client the user connects)."""
    if converter == "pydantic-ai's":
        temporal_client = await TemporalClient.connect(
            temporal_client.service_client.config.target_host,
            namespace=temporal_client.namespace,
            data_converter=dataclasses.replace(
                task_data_converter(), payload_converter_class=PydanticAIPayloadConverter
            ),
        )
    server = build(client=temporal_client, task_queue=task_queue, data_dir=tmp_path)
    async with http_client(server, elicitation_handler=approve) as client:
        task = await call_tool_task(client, "triage_ticket", {"ticket": "login broken"})
        result = await task.result(timeout=60)
    assert result.structured_content == {
        "ticket": "login broken",
        "verdict": "escalate: enterprise customer",
        "approved": True,
    }
    body = temporal_client.get_workflow_handle(f"{workflow_id_for(task.task_id, None)}-body")
    history = await body.fetch_history()
    scheduled = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    activities = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == scheduled
    ]
    assert activities == [
        "agent__triage__model_request",
        "agent__triage__toolset__<agent>__call_tool",
        "agent__triage__model_request",
    ]
    # The agent's steps replay from the history, as the next worker would run them.
    replayer = Replayer(
        workflows=[],
        plugins=[McpTasksPlugin(FastMCP("replay"), workflows=[TriageTicket]), PydanticAIPlugin()],
    )
    assert (await replayer.replay_workflow(history)).replay_failure is None


async def test_the_deprecated_temporal_agent_wrapper_composes_too(
    temporal_tasks: Callable[..., TemporalTasks], temporal_client: TemporalClient
) -> None:
    from tests.processes.pydantic_ai_workflows import WrappedAgentTool

    server = FastMCP("wrapped")
    server.add_extension(temporal_tasks(plugins=[PydanticAIPlugin()]))
    server.add_tool(workflow_tool(WrappedAgentTool))
    async with Client(server) as client:
        task = await call_tool_task(client, "wrapped_agent_tool", {"prompt": "hello"})
        result = await task.result(timeout=60)
    assert result.data == "wrapped agent read: hello"
    body = temporal_client.get_workflow_handle(f"{workflow_id_for(task.task_id, None)}-body")
    scheduled = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    activities = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        async for e in body.fetch_history_events()
        if e.event_type == scheduled
    ]
    assert activities == ["agent__wrapped__model_request"]


async def test_an_agent_failure_ends_the_task_with_is_error(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    """pydantic-ai's plugin makes its run errors fail the workflow (not the workflow
    task, which would retry forever): our task then ends isError, with the message."""
    from tests.processes.pydantic_ai_workflows import OverBudgetAgentTool

    server = FastMCP("over budget")
    server.add_extension(temporal_tasks(plugins=[PydanticAIPlugin()]))
    server.add_tool(workflow_tool(OverBudgetAgentTool))
    async with Client(server) as client:
        task = await call_tool_task(
            client, "over_budget_agent_tool", {"prompt": "hi"}, raise_on_error=False
        )
        result = await task.result(timeout=60)
        final = await task.status()
    assert final.status == "completed" and result.is_error
    assert "request_limit" in str(result.content[0]), result.content


async def test_the_example_client_runs_to_the_end(
    temporal_server: EmbeddedServer, tmp_path: Path
) -> None:
    """``python -m examples.pydantic_ai_agent.client``, as its docstring says, in its own
    process: its in-process server joins the session's Temporal as an unconfigured one would."""
    output = await run_to_the_end(
        "pydantic-ai-client",
        [sys.executable, "-m", "examples.pydantic_ai_agent.client"],
        temporal_server,
        tmp_path,
    )
    asked = "agent asks: The agent suggests 'escalate: enterprise customer'. Go ahead? -> yes"
    assert asked in output
    assert "'verdict': 'escalate: enterprise customer'" in output
    assert "'approved': True" in output


def test_a_clone_shares_the_plugins() -> None:
    """``clone`` deep-copies an extension's settings; plugins (which hold agents) are shared."""
    plugin = PydanticAIPlugin()
    assert TemporalTasks(plugins=[plugin]).clone()._plugins == (plugin,)
