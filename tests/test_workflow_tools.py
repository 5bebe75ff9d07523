"""Workflow tools: a Temporal workflow class served as an MCP task tool.

The tool's schema comes from the workflow's ``run``; its workflow runs as the
task's body, asks the client through ``ask``, reports through
``report_progress``, and survives a worker crash between its steps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastmcp import Client, FastMCP
from fastmcp.client.elicitation import ElicitResult
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import (
    DevServer,
    McpTasksPlugin,
    TemporalTasks,
    workflow_tool,
    workflow_tool_parts,
)
from fastmcp_temporal.client import call_tool_task, update_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.workflows.models import INPUT_SIGNAL
from tests.conftest import http_client
from tests.helpers import eventually, front_end, kill, spawn_worker
from tests.histories.replay import task_replayer
from tests.processes.agent_server import mcp as agent_server
from tests.processes.agent_workflows import GreeterAgent, ProgressFlood, logged_step


def greeter_server(extension: TemporalTasks, **options: Any) -> FastMCP:
    mcp = FastMCP("greeter", **options)
    mcp.add_extension(extension)
    mcp.add_tool(workflow_tool(GreeterAgent, activities=[logged_step]))
    return mcp


async def test_the_tool_schema_comes_from_the_workflow(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    server = greeter_server(temporal_tasks())
    async with Client(server) as client:
        (tool,) = await client.list_tools()
    assert tool.name == "greeter_agent"
    assert tool.description is not None
    assert tool.description.startswith("Greet someone after asking for their name")
    assert tool.input_schema["required"] == ["marker_dir"]
    assert tool.input_schema["properties"]["salutation"]["default"] == "Hello"
    assert tool.output_schema is not None
    assert set(tool.output_schema["properties"]) == {"greeting", "asked_by", "steps"}
    registered = await server.get_tool("greeter_agent")
    assert registered is not None and registered.task_config.mode == "required"


async def test_an_answered_question_never_shows_again(
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    tmp_path: Path,
) -> None:
    """From the ``tasks/update`` on, no poll shows the answered key -- not even while
    the answer is on its way to the tool's workflow (which would make a client ask twice).

    Polls read the memo, so the workflow task that takes the answer must also
    rewrite the memo; relaying the answer to the child takes another one.
    """
    server = greeter_server(temporal_tasks())
    async with Client(server) as client:
        task = await call_tool_task(client, "greeter_agent", {"marker_dir": str(tmp_path)})
        parked = await task.wait(state="input_required", timeout=30)
        (key,) = parked.input_requests
        await update_task(
            client.session, task.task_id, {key: {"action": "accept", "content": {"name": "Ada"}}}
        )
        views = []
        while not views or views[-1].status == "input_required":
            views.append(await task.status())
            await asyncio.sleep(0.005)
        (tmp_path / "release").write_text("")
        await task.wait(timeout=30)
    assert [view for view in views if key in (view.input_requests or {})] == []
    history = await temporal_client.get_workflow_handle(
        workflow_id_for(task.task_id, None)
    ).fetch_history()
    kinds = [EventType.Name(event.event_type) for event in history.events]
    answered = next(
        i
        for i, event in enumerate(history.events)
        if event.workflow_execution_signaled_event_attributes.signal_name == INPUT_SIGNAL
    )
    taken = kinds.index("EVENT_TYPE_WORKFLOW_TASK_COMPLETED", answered)
    same_task = kinds[taken + 1 : kinds.index("EVENT_TYPE_WORKFLOW_TASK_SCHEDULED", taken)]
    assert "EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED" in same_task, same_task


async def test_a_full_run_with_input_over_http(
    temporal_tasks: Callable[..., TemporalTasks], tmp_path: Path
) -> None:
    verifier = StaticTokenVerifier(tokens={"t": {"client_id": "app", "sub": "ada", "scopes": []}})
    server = greeter_server(temporal_tasks(), auth=verifier)
    (tmp_path / "release").write_text("")
    asked: list[str] = []

    async def answer(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        return ElicitResult(action="accept", content={"name": "Ada"})

    async with http_client(server, auth="t", elicitation_handler=answer) as client:
        task = await call_tool_task(client, "greeter_agent", {"marker_dir": str(tmp_path)})
        parked = await task.wait(state="input_required", timeout=30)
        assert parked.status_message == "asking for a name"
        (key,) = parked.input_requests
        assert key.endswith(".name")
        result = await task.result()
    assert asked == ["Your name?"]
    assert result.structured_content == {
        "greeting": "Hello, Ada!",
        "asked_by": "ada",
        "steps": ["first", "wait"],
    }


async def test_a_worker_crash_between_steps_does_not_rerun_finished_steps(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    process = spawn_worker(temporal_server.address, task_queue, "tests.processes.agent_server")
    try:
        async with Client(front_end(temporal_client, task_queue, agent_server)) as client:
            task = await call_tool_task(client, "greeter_agent", {"marker_dir": str(tmp_path)})
            (key,) = (await task.wait(state="input_required", timeout=30)).input_requests
            await update_task(
                client.session, task.task_id, {key: {"action": "accept", "content": {"name": "B"}}}
            )
            await eventually(lambda: "wait" in _runs(tmp_path))
            kill(process)
            (tmp_path / "release").write_text("")
            workflows, activities = await workflow_tool_parts(agent_server)
            plugin = McpTasksPlugin(agent_server, workflows=workflows, activities=activities)
            async with Worker(temporal_client, task_queue=task_queue, plugins=[plugin]):
                final = await task.wait(timeout=60)
    finally:
        kill(process)
    assert final.status == "completed" and final.result is not None
    assert final.result["structuredContent"]["greeting"] == "Hello, B!"
    assert _runs(tmp_path) == ["first", "wait", "wait"], "the finished step ran once"


async def test_cancelling_the_task_cancels_the_workflow_and_its_activity(
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    tmp_path: Path,
) -> None:
    async with Client(greeter_server(temporal_tasks())) as client:
        task = await call_tool_task(
            client, "greeter_agent", {"marker_dir": str(tmp_path)}, raise_on_error=False
        )
        (key,) = (await task.wait(state="input_required", timeout=30)).input_requests
        await update_task(
            client.session, task.task_id, {key: {"action": "accept", "content": {"name": "C"}}}
        )
        await eventually(lambda: "wait" in _runs(tmp_path))
        await task.cancel()
        final = await task.wait(timeout=30)
        assert final.status == "cancelled"
        body = temporal_client.get_workflow_handle(f"mcp-anon-{task.task_id}-body")
        deadline = asyncio.get_running_loop().time() + 60  # the child's cancel takes workflow tasks
        while asyncio.get_running_loop().time() < deadline:
            description = await body.describe()
            if description.status is not None and description.status.name == "CANCELED":
                break
            await asyncio.sleep(0.05)
        assert description.status is not None and description.status.name == "CANCELED"
        await eventually(lambda: _runs(tmp_path)[-1:] == ["cancelled"])


def _runs(marker_dir: Path) -> list[str]:
    log = marker_dir / "runs.log"
    return log.read_text().split() if log.exists() else []


async def test_progress_reported_20000_times_stays_out_of_the_task_history(
    temporal_tasks: Callable[..., TemporalTasks], temporal_client: TemporalClient
) -> None:
    """A workflow tool reports 20 000 times: ``tasks/get`` shows the latest, the task completes.

    Each report used to be a signal to the task workflow (its history limit is
    51 200 events); now the tool's workflow keeps it in its own memo, written at
    most once per workflow task.
    """
    server = FastMCP("flood")
    server.add_extension(temporal_tasks())
    server.add_tool(workflow_tool(ProgressFlood))
    async with Client(server) as client:
        task = await call_tool_task(client, "progress_flood", {"reports": 20_000})
        seen: list[str | None] = []
        while not seen or seen[-1] != "report 20000 of 20000":
            view = await task.status()
            assert view.status == "working", view
            seen.append(view.status_message)
            await asyncio.sleep(0.05)
        task_workflow_id = workflow_id_for(task.task_id, None)
        await temporal_client.get_workflow_handle(f"{task_workflow_id}-body").signal("release")
        result = await task.result()
    assert result.structured_content == {"result": 20_000}
    task_history = await temporal_client.get_workflow_handle(task_workflow_id).fetch_history()
    assert not [
        event
        for event in task_history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    ]
    assert len(task_history.events) < 50, len(task_history.events)
    body_history = await temporal_client.get_workflow_handle(
        f"{task_workflow_id}-body"
    ).fetch_history()
    memo_writes = [
        event
        for event in body_history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED
    ]
    assert len(memo_writes) == 1, "20 000 reports in one workflow task: one memo write"
    # The patched paths (progress in the memo; legs retried until the deadline)
    # replay, as the next deploy's workers will replay them.
    replayer = task_replayer([ProgressFlood])
    for history in (task_history, body_history):
        assert (await replayer.replay_workflow(history)).replay_failure is None
