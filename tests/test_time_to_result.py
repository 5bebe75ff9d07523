"""Time to result: the polling interval a task advertises, and reads that never wait on a worker."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import mcp_types
from fastmcp import Client, Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import (
    PollWorkflowTaskQueueRequest,
    RespondWorkflowTaskFailedRequest,
)
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import McpTasksPlugin, TemporalTasks
from fastmcp_temporal.client import call_tool_task, update_task
from fastmcp_temporal.server.core.wire import GetTaskResult, iso
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.server.tasks.poll_interval import FLOOR_MS, SILENCE_SHARE, adapt, interval_ms
from fastmcp_temporal.workflows.models import INPUT_SIGNAL
from tests.helpers import declares_elicitation
from tests.test_lifecycle import answers

T0 = datetime(2026, 1, 1, tzinfo=UTC)
#: Bound on a read with no worker: well under the 120 s query timeout a read that
#: waited on a worker would take, well over the seconds a loaded machine's reads take.
NO_WAIT_S = 60


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_interval_starts_at_the_floor_and_grows_with_age_and_silence() -> None:
    def interval(age: float, silence: float, ceiling: int = 5000) -> int:
        return interval_ms(
            created_at=T0, last_updated_at=_at(age - silence), now=_at(age), ceiling_ms=ceiling
        )

    assert interval(0, 0) == FLOOR_MS <= 250
    assert interval(2, 2) == FLOOR_MS  # the first two seconds at the floor
    assert interval(3, 3) == 300  # silent: 10 % of the silence
    assert interval(10, 10) == 1000
    assert interval(10, 0) == 500  # just changed state, but old: 5 % of the age
    assert interval(10, 4) == 500
    assert interval(10, 8) == 800
    assert interval(50, 50) == 5000  # a silent task reaches the default at 50 s
    assert interval(3600, 3600) == 5000  # and never goes above it


def test_an_explicit_interval_is_the_ceiling() -> None:
    assert interval_ms(created_at=T0, last_updated_at=T0, now=_at(60), ceiling_ms=1000) == 1000
    assert interval_ms(created_at=T0, last_updated_at=T0, now=T0, ceiling_ms=50) == 50


def test_finished_tasks_keep_the_tool_interval() -> None:
    done = GetTaskResult(
        task_id="t" * 16,
        status="completed",
        created_at=iso(T0),
        last_updated_at=iso(_at(1)),
        ttl_ms=60_000,
        poll_interval_ms=5000,
        result={"content": []},
    )
    assert adapt(done, now=_at(2)).poll_interval_ms == 5000
    running = done.model_copy(update={"status": "working", "result": None})
    assert adapt(running, now=_at(21)).poll_interval_ms == 2000


async def test_create_and_get_carry_the_current_interval(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    mcp = FastMCP("intervals")
    mcp.add_extension(temporal_tasks())
    release = asyncio.Event()

    @mcp.tool(task=True)
    async def quiet() -> str:
        await release.wait()
        return "done"

    @mcp.tool(task=TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=150)))
    async def eager() -> str:
        await release.wait()
        return "done"

    async with Client(mcp) as client:
        quiet_task = await call_tool_task(client, "quiet", {})
        eager_task = await call_tool_task(client, "eager", {})
        assert quiet_task.create_result.poll_interval_ms == FLOOR_MS
        assert eager_task.create_result.poll_interval_ms == 150  # the tool's own ceiling
        await asyncio.sleep(2.5)
        polled = await quiet_task.status()
        assert polled.status == "working"
        age_ms = (datetime.now(UTC) - _when(polled.created_at)).total_seconds() * 1000
        # A share of the silence since creation; the poll happened a moment before ``now``.
        assert SILENCE_SHARE * 2500 <= polled.poll_interval_ms <= SILENCE_SHARE * age_ms + 1
        assert (await eager_task.status()).poll_interval_ms == 150
        release.set()
        assert (await quiet_task.result()).data == "done"
        assert (await quiet_task.status()).poll_interval_ms == 5000


async def test_an_answer_sent_while_a_worker_holds_a_workflow_task_is_read_back_at_once(
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """``tasks/update`` returns once its answer is readable, even when Temporal buffers it.

    A signal that arrives while a worker runs one of the workflow's workflow
    tasks is durable but out of the history until that workflow task ends, so
    no read can see it. Here a raw poll stands in for a worker that holds the
    workflow task applying the first answer when the second one arrives: the
    second ``tasks/update`` does not return while it is held, and the poll after
    it shows the task ``working``. (Before, the update returned at once and the
    poll still asked the answered key: the client asked its user again.)
    """
    mcp = FastMCP("front-end")
    extension = temporal_tasks(run_worker=False)
    mcp.add_extension(extension)

    mcp.tool(task=True)(survey)

    async with Client(mcp, elicitation_handler=declares_elicitation) as client:
        task = await call_tool_task(client, "survey", {})
        async with Worker(temporal_client, task_queue=task_queue, plugins=[McpTasksPlugin(mcp)]):
            parked = await task.wait(state="input_required", timeout=60)
        first, second = sorted(parked.input_requests)
        await update_task(client.session, task.task_id, {first: _accept("tea")})
        held = await temporal_client.workflow_service.poll_workflow_task_queue(
            PollWorkflowTaskQueueRequest(
                namespace=temporal_client.namespace,
                task_queue=TaskQueue(name=task_queue),
                identity="a worker in the middle of a workflow task",
            )
        )
        assert held.workflow_execution.workflow_id == workflow_id_for(
            task.task_id, None, extension.engine.scope_secret
        )
        answering = asyncio.create_task(
            update_task(client.session, task.task_id, {second: _accept("cake")})
        )
        await asyncio.sleep(1)
        assert not answering.done(), "tasks/update returned while its answer was unreadable"
        await temporal_client.workflow_service.respond_workflow_task_failed(
            RespondWorkflowTaskFailedRequest(
                namespace=temporal_client.namespace,
                task_token=held.task_token,
                identity="a worker in the middle of a workflow task",
            )
        )
        await asyncio.wait_for(answering, timeout=NO_WAIT_S)
        answered = await asyncio.wait_for(task.status(), timeout=NO_WAIT_S)
        assert answered.status == "working"
        assert not answered.input_requests
        async with Worker(temporal_client, task_queue=task_queue, plugins=[McpTasksPlugin(mcp)]):
            assert (await task.result()).data == "tea and cake"


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


async def survey(ctx: Context) -> str:
    """Two questions at once; the answers, once both are in."""
    given = answers(ctx)
    if not given:
        return _two_questions()  # type: ignore[return-value]
    return f"{given['first']} and {given['second']}"


def _accept(text: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"answer": text}}


def _two_questions() -> mcp_types.InputRequiredResult:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    return mcp_types.InputRequiredResult(
        input_requests={
            key: mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(message=key, requested_schema=schema)
            )
            for key in ("first", "second")
        }
    )


async def input_signals(temporal: TemporalClient, extension: TemporalTasks, task_id: str) -> int:
    """How many ``tasks/update`` signals the task's history holds."""
    handle = temporal.get_workflow_handle(
        workflow_id_for(task_id, None, extension.engine.scope_secret)
    )
    return sum(
        [
            event.workflow_execution_signaled_event_attributes.signal_name == INPUT_SIGNAL
            async for event in handle.fetch_history_events()
        ]
    )


async def test_reads_without_a_worker_show_an_acknowledged_update(
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """No worker: ``tasks/get`` after ``tasks/update`` shows the keys answered, never waits.

    The query timeout is far longer than the guard around each read, so a read
    that asked a worker (the old path) would fail here instead of degrading.
    """
    mcp = FastMCP("front-end")
    extension = temporal_tasks(run_worker=False, query_timeout=timedelta(seconds=120))
    mcp.add_extension(extension)

    mcp.tool(task=True)(survey)

    async with Client(mcp, elicitation_handler=declares_elicitation) as client:
        task = await call_tool_task(client, "survey", {})
        async with Worker(temporal_client, task_queue=task_queue, plugins=[McpTasksPlugin(mcp)]):
            parked = await task.wait(state="input_required", timeout=60)
        first, second = sorted(parked.input_requests)
        # The worker is gone. Half an answer: the other key is still outstanding.
        await update_task(client.session, task.task_id, {first: _accept("tea")})
        half = await asyncio.wait_for(task.status(), timeout=NO_WAIT_S)
        assert half.status == "input_required"
        assert list(half.input_requests) == [second]
        assert _when(half.last_updated_at) > _when(parked.last_updated_at)
        # The rest: the task is working again, though no worker has applied anything.
        await update_task(client.session, task.task_id, {second: _accept("cake")})
        answered = await asyncio.wait_for(task.status(), timeout=NO_WAIT_S)
        assert answered.status == "working"
        assert not answered.input_requests
        # Answering an already answered key changes nothing, and is not signalled again.
        await update_task(client.session, task.task_id, {first: _accept("coffee")})
        assert (await asyncio.wait_for(task.status(), timeout=NO_WAIT_S)).status == "working"
        assert await input_signals(temporal_client, extension, task.task_id) == 2
        async with Worker(temporal_client, task_queue=task_queue, plugins=[McpTasksPlugin(mcp)]):
            assert (await task.result()).data == "tea and cake"
