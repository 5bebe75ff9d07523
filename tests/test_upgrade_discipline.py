"""The upgrade discipline, proven once on a recorded history and a live one.

``tests/workflow_variants.py`` changes the task workflow's commands (a timer in
front of every leg). Unguarded, the change breaks the recorded ``plain_result``
task: a worker with that code could not continue a task started before it.
Behind ``workflow.patched`` the old history replays, and a task recorded live
on the patched code replays too. The last stage, ``workflow.deprecate_patch``,
replays only the new history: it ships once no pre-patch task is in flight.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from fastmcp import Client, FastMCP
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowHistory
from temporalio.worker import Worker
from temporalio.workflow import NondeterminismError

from fastmcp_temporal import McpTasksPlugin, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.workflows.models import TaskStart
from fastmcp_temporal.workflows.patches import PATCH_LEVEL
from tests.histories.replay import load_history, patch_ids, task_replayer
from tests.workflow_variants import (
    PATCH_ID,
    WORKFLOW_TYPE,
    DeprecatedPause,
    GuardedPause,
    UnguardedPause,
)

RECORDED = "plain_result"


async def replay(history: WorkflowHistory, *variants: type) -> Exception | None:
    """Replay ``history`` on the task workflows (+ ``variants``); the failure, if any."""
    result = await task_replayer(variants).replay_workflow(history, raise_on_replay_failure=False)
    return result.replay_failure


def test_the_recorded_history_is_the_variants_workflow_type() -> None:
    started = load_history(RECORDED).events[0].workflow_execution_started_event_attributes
    assert started.workflow_type.name == WORKFLOW_TYPE


async def test_an_unguarded_command_change_breaks_a_task_in_flight() -> None:
    failure = await replay(load_history(RECORDED), UnguardedPause)
    assert isinstance(failure, NondeterminismError), failure
    assert "Nondeterminism" in str(failure)


async def test_the_same_change_behind_patched_replays_the_old_history() -> None:
    assert await replay(load_history(RECORDED), GuardedPause) is None


@pytest.fixture
async def patched_history(
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    task_queue: str,
) -> WorkflowHistory:
    """A task run live on a worker with ``GuardedPause``: the history new code writes."""
    mcp = FastMCP("patched")
    mcp.add_extension(temporal_tasks(run_worker=False))

    @mcp.tool(task=True)
    async def add(a: int, b: int) -> int:
        return a + b

    plugin = McpTasksPlugin(mcp, workflows=[GuardedPause])
    worker = Worker(temporal_client, task_queue=task_queue, plugins=[plugin])
    async with worker, Client(mcp) as client:
        task = await call_tool_task(client, "add", {"a": 2, "b": 3})
        assert (await task.result()).data == 5
    handle = temporal_client.get_workflow_handle(workflow_id_for(task.task_id, None))
    return await handle.fetch_history()


async def test_a_task_recorded_on_the_patched_code_replays_on_it(
    patched_history: WorkflowHistory,
) -> None:
    patches = [
        json.loads(event.marker_recorded_event_attributes.details["patch-data"].payloads[0].data)
        for event in patched_history.events
        if event.marker_recorded_event_attributes.marker_name == "core_patch"
    ]
    assert {"id": PATCH_ID, "deprecated": False} in patches
    kinds = [event.event_type for event in patched_history.events]
    assert EventType.EVENT_TYPE_TIMER_STARTED in kinds, "the new command ran"
    assert await replay(patched_history, GuardedPause) is None
    # Old code cannot continue a new task: roll forward only (or pin tasks to a build).
    old_code = await replay(patched_history)
    assert isinstance(old_code, NondeterminismError), old_code


async def test_deprecate_patch_replays_new_tasks_only(patched_history: WorkflowHistory) -> None:
    """``deprecate_patch`` is the step after ``patched``: safe once every old task is gone."""
    assert await replay(patched_history, DeprecatedPause) is None
    assert isinstance(await replay(load_history(RECORDED), DeprecatedPause), NondeterminismError)


async def test_a_new_task_takes_the_folded_patches_without_a_marker(
    temporal_tasks: Callable[..., TemporalTasks], temporal_client: TemporalClient
) -> None:
    """A task started now carries this release's patch level and records no patch at all
    (``workflows/patches.py``): no marker, no ``TemporalChangeVersion`` upsert."""
    mcp = FastMCP("current")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def add(a: int, b: int) -> int:
        return a + b

    async with Client(mcp) as client:
        task = await call_tool_task(client, "add", {"a": 2, "b": 3})
        assert (await task.result()).data == 5
    handle = temporal_client.get_workflow_handle(workflow_id_for(task.task_id, None))
    history = await handle.fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert TaskStart.model_validate_json(started.input.payloads[0].data).patch_level == PATCH_LEVEL
    assert patch_ids(history) == []
    upserts = [
        event.upsert_workflow_search_attributes_event_attributes.search_attributes
        for event in history.events
        if event.HasField("upsert_workflow_search_attributes_event_attributes")
    ]
    upserted = [name for upsert in upserts for name in upsert.indexed_fields]
    assert "TemporalChangeVersion" not in upserted, upserted
