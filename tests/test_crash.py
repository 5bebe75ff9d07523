"""A dead worker loses nothing: its leg times out on heartbeats and runs elsewhere;
a starved one whose leg is cancelled meanwhile still ends the task cancelled."""

from __future__ import annotations

import os
import signal
from datetime import timedelta
from pathlib import Path

from fastmcp import Client
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import DevServer, McpTasksPlugin
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.workflows.patches import LEG_CANCEL_WINS_PATCH
from tests.helpers import eventually, front_end, kill, spawn_worker, until_event
from tests.histories.replay import HISTORIES, load_history, patch_ids, task_replayer
from tests.processes.crash_server import mcp as crash_server

#: The replay gate's recorded history of a leg that missed its heartbeats while its
#: task was being cancelled (patch ``leg-cancel-wins``); ``RECORD_CRASH_HISTORIES=1``
#: writes it from the live test below (it needs a worker process to stop).
LEG_CANCEL_WINS_HISTORY = "crash/leg_cancel_wins"


async def test_killed_worker_mid_leg_is_replaced_and_the_task_completes(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    process = spawn_worker(temporal_server.address, task_queue, "tests.processes.crash_server")
    try:
        async with Client(front_end(temporal_client, task_queue, crash_server)) as client:
            task = await call_tool_task(client, "record_and_wait", {"marker_dir": str(tmp_path)})
            await eventually(lambda: len(list(tmp_path.glob("run-*"))) == 1)
            kill(process)
            (tmp_path / "release").write_text("")
            async with Worker(
                temporal_client,
                task_queue=task_queue,
                plugins=[McpTasksPlugin(crash_server)],
                max_heartbeat_throttle_interval=timedelta(seconds=1),
            ):
                final = await task.wait(timeout=60)
                status_seen = final.status
            runs = sorted(p.name for p in tmp_path.glob("run-*"))
    finally:
        kill(process)
    assert status_seen == "completed"
    assert final.result is not None
    assert final.result["structuredContent"]["result"] == f"finished in {os.getpid()}"
    assert len(runs) == 2, f"the leg ran once per worker, no more: {runs}"
    assert {run.split("-")[1] for run in runs} == {str(process.pid), str(os.getpid())}


async def test_a_leg_that_misses_its_heartbeats_while_cancelled_ends_the_task_cancelled(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """A loaded machine: the legs' worker is alive but gets no CPU (``SIGSTOP``) from
    just before ``tasks/cancel`` until Temporal has timed its leg out (2 s heartbeat
    timeout) -- after the cancellation was asked of it, so no retry follows. The
    client asked for a cancellation and the leg is stopped: the task ends
    ``cancelled``, not ``failed`` with a heartbeat timeout. The workflows run here,
    the legs on a queue of their own in that process, so only the leg starves."""
    legs = f"{task_queue}-legs"
    process = spawn_worker(temporal_server.address, legs, "tests.processes.crash_server")
    try:
        async with (
            Worker(temporal_client, task_queue=task_queue, plugins=[McpTasksPlugin(crash_server)]),
            Client(front_end(temporal_client, task_queue, crash_server, leg_queue=legs)) as client,
        ):
            task = await call_tool_task(client, "record_and_wait", {"marker_dir": str(tmp_path)})
            await eventually(lambda: len(list(tmp_path.glob("run-*"))) == 1)
            os.killpg(process.pid, signal.SIGSTOP)
            await task.cancel()
            workflow_id = workflow_id_for(task.task_id, None)
            handle = temporal_client.get_workflow_handle(workflow_id)
            events = await until_event(handle, EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT)
            os.killpg(process.pid, signal.SIGCONT)
            final = await task.wait(timeout=60)
    finally:
        kill(process)
    assert final.status == "cancelled", final
    timed_out = events.index(EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT)
    assert events.index(EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED) < timed_out, events
    history = await handle.fetch_history()
    # The new branch of ``leg-cancel-wins`` (cancelled above), folded into the task's
    # patch level: no marker (the recorded history below took it behind one).
    assert patch_ids(history) == [], patch_ids(history)
    replayed = await task_replayer().replay_workflow(history)
    assert replayed.replay_failure is None, "and it replays"
    if os.environ.get("RECORD_CRASH_HISTORIES"):
        (HISTORIES / f"{LEG_CANCEL_WINS_HISTORY}.json").write_text(history.to_json())


async def test_the_recorded_leg_cancelled_while_starved_replays() -> None:
    """The replay gate for ``leg-cancel-wins``: the recorded task took the patched path
    (its marker; the leg timed out after its cancellation was requested; the task
    ended cancelled), and it replays on today's code."""
    history = load_history(LEG_CANCEL_WINS_HISTORY)
    events = [event.event_type for event in history.events]
    timed_out = events.index(EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT)
    assert events.index(EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED) < timed_out
    assert events[-1] == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED
    assert LEG_CANCEL_WINS_PATCH in patch_ids(history), patch_ids(history)
    replayed = await task_replayer().replay_workflow(history)
    assert replayed.replay_failure is None
