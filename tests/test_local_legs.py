"""Short tools run their legs as local activities, with their progress shown.

A tool whose FastMCP ``timeout`` is below ``LegPolicy.local_timeout_s`` cannot
hold a workflow task longer than that, so its legs run as local activities by
default (no activity task round trip: about twice the tasks per second,
``bench/results/leg_costs.md``). ``ToolOptions(local_legs=...)`` decides for a
tool either way, and a tool whose legs go to their own task queue keeps them
there. A leg that follows the client's answers is an activity in any case
(racing answers: ``tests/test_lifecycle.py``).

A local leg has no heartbeat: its progress is a signal to its own workflow,
which puts the message in its memo, so ``tasks/get`` shows it with the same one
``describe``. The workflow receives every such signal before it ends the task:
a signal that reaches Temporal while the closing workflow task runs makes
Temporal reject that task's commands (``UNHANDLED_COMMAND``), the local leg's
result with them, and the body would run a second time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from fastmcp import Client, Context, FastMCP
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import WorkflowHistory

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import ToolTask, call_tool_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.server.tasks.starter import ToolOptions, WorkflowStarter
from fastmcp_temporal.workflows.models import LOCAL_LEG_PROGRESS_SIGNAL, LegPolicy


async def history_of(extension: TemporalTasks, task: ToolTask) -> WorkflowHistory:
    engine = extension.engine
    workflow_id = workflow_id_for(task.task_id, None, engine.scope_secret)
    return await engine.client.get_workflow_handle(workflow_id).fetch_history()


def ran_locally(history: WorkflowHistory) -> bool:
    kinds = {event.event_type for event in history.events}
    assert (EventType.EVENT_TYPE_MARKER_RECORDED in kinds) or (
        EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED in kinds
    ), "the leg ran neither way"
    return EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED not in kinds


def rejected_workflow_tasks(history: WorkflowHistory) -> list[str]:
    return [
        WorkflowTaskFailedCause.Name(event.workflow_task_failed_event_attributes.cause)
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]


async def test_a_tool_with_a_short_timeout_runs_its_legs_locally_unless_told_otherwise(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    extension = temporal_tasks(
        tools={
            "short_but_remote": ToolOptions(local_legs=False),
            "short_on_its_queue": ToolOptions(task_queue="elsewhere"),
            "long_but_local": ToolOptions(local_legs=True),
        }
    )
    mcp = FastMCP("short-tools")
    mcp.add_extension(extension)

    async def done() -> str:
        return "done"

    # tool name -> (its FastMCP timeout, whether its legs run locally)
    expected = {
        "short": (5, True),
        "at_the_local_limit": (30, False),  # not below LegPolicy.local_timeout_s (30 s)
        "no_timeout": (None, False),
        "short_but_remote": (5, False),
        "long_but_local": (None, True),
    }
    for name, (timeout, _) in expected.items():
        mcp.tool(task=True, name=name, timeout=timeout)(done)
    async with Client(mcp) as client:
        for name, (_, local) in expected.items():
            task = await call_tool_task(client, name, {})
            assert (await task.result()).data == "done"
            assert ran_locally(await history_of(extension, task)) is local, name

    mcp.tool(task=True, name="short_on_its_queue", timeout=5)(done)
    async with Client(mcp) as client:
        task = await call_tool_task(client, "short_on_its_queue", {})
        # Nobody serves "elsewhere": the leg waits there as an activity.
        for _ in range(100):
            history = await history_of(extension, task)
            if any(
                e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED for e in history.events
            ):
                break
            await asyncio.sleep(0.1)
        assert not ran_locally(history)
        await task.cancel()


async def test_a_local_legs_progress_is_its_tasks_status_message(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    mcp = FastMCP("local-progress")
    extension = temporal_tasks()
    mcp.add_extension(extension)
    seen, runs = asyncio.Event(), []

    @mcp.tool(task=True, timeout=20)
    async def index(ctx: Context) -> str:
        runs.append(1)
        for step in range(1, 4):
            await ctx.report_progress(step, 3, f"indexed part {step} of 3")
        await asyncio.wait_for(seen.wait(), 15)
        return "indexed"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "index", {})
        message = None
        for _ in range(150):
            status = await task.status()
            message = status.status_message
            if message == "indexed part 3 of 3":
                break
            await asyncio.sleep(0.1)
        assert message == "indexed part 3 of 3"
        assert status.status == "working"
        seen.set()
        final = await task.wait(timeout=30)
        assert final.status == "completed"
        assert final.status_message is None  # no stale progress on a finished task
        assert (await task.result()).data == "indexed"
        history = await history_of(extension, task)
    assert ran_locally(history)
    assert runs == [1]
    signals = [
        e.workflow_execution_signaled_event_attributes.signal_name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    ]
    # Three reports in a row are coalesced: the first at once, the newest after it.
    assert 1 <= len(signals) <= 2 and set(signals) == {LOCAL_LEG_PROGRESS_SIGNAL}
    assert rejected_workflow_tasks(history) == []


async def test_progress_reported_just_before_a_local_leg_returns_never_runs_the_body_twice(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    """The signal lands while the leg's workflow task is open: the task waits for it.

    Without that wait the closing workflow task is rejected (``UNHANDLED_COMMAND``)
    and the leg runs again: every run here would count twice.
    """
    mcp = FastMCP("local-progress-race")
    extension = temporal_tasks()
    mcp.add_extension(extension)
    runs: list[str] = []

    @mcp.tool(task=True, timeout=10)
    async def quick(ctx: Context, n: int) -> int:
        runs.append(f"run {n}")
        await ctx.report_progress(1, 1, "almost done")
        await asyncio.sleep(0.2)  # the signal reaches Temporal before the leg returns
        return n

    async with Client(mcp) as client:
        tasks = [await call_tool_task(client, "quick", {"n": n}) for n in range(5)]
        assert [(await task.result()).data for task in tasks] == list(range(5))
        histories = [await history_of(extension, task) for task in tasks]
    assert sorted(runs) == [f"run {n}" for n in range(5)]
    for history in histories:
        assert ran_locally(history)
        assert rejected_workflow_tasks(history) == []


def test_legs_sent_to_a_queue_of_their_own_stay_activities_even_for_short_tools() -> None:
    """The rule as ``WorkflowStarter`` applies it, with and without a global leg queue."""
    starter = WorkflowStarter(
        None,  # type: ignore[arg-type]  (choosing a policy needs no Temporal)
        task_queue="tasks",
        tools={"explicit": ToolOptions(local_legs=True), "routed": ToolOptions(task_queue="gpu")},
    )
    default, routed_everywhere = LegPolicy(), LegPolicy(task_queue="legs")
    assert starter.leg_policy("plain", default, tool_timeout_s=5).local
    assert not starter.leg_policy("plain", default, tool_timeout_s=None).local
    assert not starter.leg_policy("plain", default, tool_timeout_s=45).local
    assert not starter.leg_policy("routed", default, tool_timeout_s=5).local
    assert not starter.leg_policy("plain", routed_everywhere, tool_timeout_s=5).local
    assert starter.leg_policy("explicit", routed_everywhere, tool_timeout_s=None).local
    assert starter.leg_policy("plain", LegPolicy(local_timeout_s=120), tool_timeout_s=60).local
