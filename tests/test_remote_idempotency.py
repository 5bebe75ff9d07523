"""A create whose answer was lost is retried with the same idempotency key (issue 20).

The crash window: our worker sent ``tools/call``, the remote created its task and
answered, and the worker died before anything reached Temporal (the activity's
completion, the heartbeat with the remote task id, a function tool's
checkpoint). Temporal retries the create. The window is made with Temporal's
own machinery: a worker interceptor lets the first attempt's call reach the
real remote, drops that attempt's heartbeats (a dead worker sends none) and
fails it with a retryable error. Against our server the retry names the same
key and gets the same remote task; the peer (``fastmcp-tasks``) ignores the
key, still works, and shows the window that remains.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastmcp import Client
from pydantic_core import to_jsonable_python
from temporalio import activity
from temporalio.client import Client as TemporalClient
from temporalio.exceptions import ApplicationError
from temporalio.plugin import SimplePlugin
from temporalio.worker import (
    ActivityInboundInterceptor,
    ActivityOutboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.workflows.remote_models import CALL_TOOL_ACTIVITY
from tests.helpers import eventually
from tests.remote_harness import (
    RemotePeer,
    history_text,
    lines,
    orchestrator,
    orchestrator_tasks,
    report_of,
)
from tests.test_remote_mcp import remote_task_ids

FUNCTION_TOOL = "count_in_a_function_tool"
_TASK_ID = re.compile(r'"task_id":\s*"([^"]+)"')


class LoseTheFirstAnswer(Interceptor):
    """Attempt 1 of each activity of ``activity_types`` runs for real, then its worker
    "dies": its heartbeats never leave and it fails (retryable) if it created a
    remote task. ``lost`` maps each remote task id so created to its activity."""

    def __init__(self, *activity_types: str) -> None:
        self.activity_types = activity_types
        self.lost: dict[str, str] = {}

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _LosesTheFirstAnswer(next, self)


class _LosesTheFirstAnswer(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, crash: LoseTheFirstAnswer) -> None:
        super().__init__(next)
        self.crash = crash

    def init(self, outbound: ActivityOutboundInterceptor) -> None:
        info = activity.info()
        self.in_window = info.activity_type in self.crash.activity_types and info.attempt == 1
        super().init(_NoHeartbeats(outbound) if self.in_window else outbound)

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        result = await super().execute_activity(input)
        created = set(_TASK_ID.findall(_unescaped(result))) - set(self.crash.lost)
        if not self.in_window or not created:
            return result
        info = activity.info()
        (task_id,) = created
        self.crash.lost[task_id] = f"{info.workflow_id}/{info.activity_id}"
        raise ApplicationError(f"worker lost after the remote created task {task_id}")


class _NoHeartbeats(ActivityOutboundInterceptor):
    def heartbeat(self, *details: Any) -> None:
        pass  # a dead worker's heartbeat never reaches Temporal


def _unescaped(value: Any) -> str:
    """The value as JSON, a JSON string inside it (a checkpoint's state) opened up."""
    return json.dumps(to_jsonable_python(value)).replace('\\"', '"')


def crashing_orchestrator(
    temporal_tasks: Callable[..., TemporalTasks], peer_url: str, crash: LoseTheFirstAnswer
) -> Any:
    plugin = SimplePlugin("tests.LoseTheFirstAnswer", interceptors=[crash])
    return orchestrator(temporal_tasks(**orchestrator_tasks(peer_url), plugins=[plugin]))


async def create_attempts(temporal_client: TemporalClient, workflow_id: str) -> list[str]:
    """For each create activity in the history: its last attempt and the failure before it."""
    history = await temporal_client.get_workflow_handle(workflow_id).fetch_history()
    scheduled = {
        event.event_id: event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
    }
    attempts = []
    for event in history.events:
        if not event.HasField("activity_task_started_event_attributes"):
            continue
        started = event.activity_task_started_event_attributes
        if scheduled[started.scheduled_event_id] == CALL_TOOL_ACTIVITY:
            attempts.append(f"attempt {started.attempt} after: {started.last_failure.message}")
    return attempts


async def test_a_create_whose_answer_was_lost_attaches_to_the_same_remote_task(
    peer: RemotePeer,
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    tmp_path: Path,
) -> None:
    crash = LoseTheFirstAnswer(CALL_TOOL_ACTIVITY)
    server = crashing_orchestrator(temporal_tasks, peer.url, crash)
    (tmp_path / "release-c").write_text("")
    arguments = {"marker_dir": str(tmp_path), "tag": "c"}
    async with Client(server) as client:
        task = await call_tool_task(
            client, "call_remote", {"tool": "count_and_wait", "arguments": arguments}
        )
        final = await task.wait(timeout=90)
    assert report_of(final)["text"] == "c done"
    (lost,) = crash.lost
    body = workflow_id_for(task.task_id, None) + "-body"
    recorded = remote_task_ids(await history_text(temporal_client, body))
    attempts = await create_attempts(temporal_client, body)
    assert attempts == [f"attempt 2 after: worker lost after the remote created task {lost}"]
    if peer.kind == "ours":
        assert recorded == {lost}, "the retry got the task the lost answer named"
        assert lines(tmp_path / "runs-c.log") == ["run"], "the remote body ran once"
    else:
        # The peer ignores the key: the call works, and the window remains -- a
        # second remote task, the first orphaned (its body runs too).
        assert len(recorded) == 1 and recorded != {lost}
        await eventually(lambda: lines(tmp_path / "runs-c.log") == ["run", "run"])


async def test_fanned_out_calls_and_a_function_tools_step_each_keep_their_own_key(
    temporal_server: DevServer,
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """Three creates of one ``gather`` each lose their first answer: three remote
    tasks, each created once (the key differs per call, not per attempt). A function
    tool's leg that dies after its ``remote_step`` created the task: the same."""
    peer = RemotePeer("ours", tmp_path, temporal_server.address, task_queue)
    await peer.start()
    crash = LoseTheFirstAnswer(CALL_TOOL_ACTIVITY, FUNCTION_TOOL)
    tags = ["f0", "f1", "f2", "step"]
    try:
        server = crashing_orchestrator(temporal_tasks, peer.url, crash)
        async with Client(server) as client:
            calls = [{"marker_dir": str(tmp_path), "tag": tag} for tag in tags[:3]]
            fanning = await call_tool_task(
                client, "fan_out", {"tool": "count_and_wait", "calls": calls}
            )
            stepping = await call_tool_task(
                client, FUNCTION_TOOL, {"marker_dir": str(tmp_path), "tag": "step"}
            )
            # Released only once every create was lost and retried: the retries
            # meet remote tasks that still run (the other test's meets an ended one).
            await eventually(lambda: len(crash.lost) == 4, timeout=60)
            for tag in tags:
                (tmp_path / f"release-{tag}").write_text("")
            fanned = await fanning.wait(timeout=90)
            stepped = await stepping.wait(timeout=90)
    finally:
        peer.stop()
    assert report_of(fanned)["result"] == ["f0 done", "f1 done", "f2 done"]
    assert stepped.status == "completed" and stepped.result is not None, stepped
    assert stepped.result["content"][0]["text"] == "step done"
    for tag in tags:
        assert lines(tmp_path / f"runs-{tag}.log") == ["run"], f"{tag}: the remote body ran once"
    body = workflow_id_for(fanning.task_id, None) + "-body"
    fanned_lost = {task_id for task_id, where in crash.lost.items() if where.startswith(body)}
    assert len(fanned_lost) == 3, crash.lost
    assert remote_task_ids(await history_text(temporal_client, body)) == fanned_lost
    attempts = await create_attempts(temporal_client, body)
    assert sorted(attempt.split(" after")[0] for attempt in attempts) == ["attempt 2"] * 3
    step_lost = set(crash.lost) - fanned_lost
    assert len(step_lost) == 1, crash.lost
    step_history = await history_text(temporal_client, workflow_id_for(stepping.task_id, None))
    recorded_step = remote_task_ids(step_history.replace('\\"', '"'))
    assert recorded_step == step_lost, "the checkpoint names the task the lost answer named"
