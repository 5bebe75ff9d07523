"""Remote calls survive crashes on either side, relay progress, and replay.

Real processes over real HTTP: the remote (ours or the peer) in its own process,
the orchestrating worker in its own process where the test kills it.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from fastmcp import Client
from mcp.shared.exceptions import MCPError
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.client import call_tool_task, update_task
from fastmcp_temporal.client_wire import is_retryable_busy
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from tests.helpers import declares_elicitation, eventually, front_end, until_event
from tests.histories.replay import HISTORIES, load_history, task_replayer
from tests.processes.remote_caller import tools
from tests.processes.remote_workflows import (
    KILLED_WORKER_HEARTBEAT_S,
    CallRemote,
    FanOut,
    ListRemoteTools,
    RemoteTour,
)
from tests.processes.running import Process
from tests.remote_harness import (
    TOKEN,
    RemotePeer,
    history_text,
    lines,
    orchestrator,
    orchestrator_tasks,
    report_of,
)
from tests.test_remote_mcp import _recorded_remote_task, remote_task_ids

WORKFLOWS = [CallRemote, FanOut, ListRemoteTools, RemoteTour]
#: The replay gate's recorded remote-calling histories (``RECORD_REMOTE_HISTORIES=1`` writes them).
#: One generation per change of what a remote call does in history, oldest first; the
#: newest is the one ``RECORD_REMOTE_HISTORIES=1`` writes. ``_2``: the first wait is a
#: short local activity (patch ``remote-local-first-wait``).
GENERATIONS = ["remote/remote_tour", "remote/remote_tour_2"]
RECORDED = GENERATIONS[-1]


class OrchestratingWorkers:
    """The orchestrating worker in its own process (``tests.processes.remote_caller``),
    which a test kills with ``kill -9`` and replaces by a new one."""

    def __init__(
        self, temporal_server: DevServer, task_queue: str, peer: RemotePeer, log_dir: Path
    ) -> None:
        self._args = [sys.executable, "-m", "tests.processes.remote_caller"]
        self._args += [temporal_server.address, task_queue, peer.url, TOKEN]
        self._log_dir = log_dir
        self.started: list[Process] = []

    async def start(self) -> None:
        log = self._log_dir / f"worker-{len(self.started) + 1}.log"
        self.started.append(Process("orchestrating worker", self._args, {}, log))
        await self.started[-1].wait_for_output("worker ready")

    async def kill_and_replace(self) -> None:
        """``kill -9`` the running worker (mid-step), then start another and wait until it polls."""
        self.started[-1].signal(9)
        self.started[-1].popen.wait()
        await self.start()

    def stop(self) -> None:
        for process in self.started:
            process.stop()


@asynccontextmanager
async def orchestrating_worker(
    temporal_server: DevServer, task_queue: str, peer: RemotePeer, log_dir: Path
) -> AsyncIterator[OrchestratingWorkers]:
    """A running orchestrating worker; every worker started inside is stopped on the way out."""
    workers = OrchestratingWorkers(temporal_server, task_queue, peer, log_dir)
    try:
        await workers.start()
        yield workers
    finally:
        workers.stop()


@pytest.mark.chaos  # kills and restarts real processes
async def test_a_killed_orchestrating_worker_reattaches_and_the_remote_body_runs_once(
    peer: RemotePeer,
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    async with (
        orchestrating_worker(temporal_server, task_queue, peer, tmp_path) as workers,
        Client(front_end(temporal_client, task_queue, tools())) as client,
    ):
        arguments = {"marker_dir": str(tmp_path), "tag": "k"}
        call = {
            "tool": "count_and_wait",
            "arguments": arguments,
            "heartbeat_s": KILLED_WORKER_HEARTBEAT_S,
        }
        task = await call_tool_task(client, "call_remote", call)
        await eventually(lambda: lines(tmp_path / "runs-k.log") == ["run"])
        remote_id = await _recorded_remote_task(temporal_client, task.task_id)
        # Mid-wait: the remote task id is in history, the wait is running.
        await workers.kill_and_replace()
        (tmp_path / "release-k").write_text("")
        final = await task.wait(timeout=90)
    assert report_of(final)["text"] == "k done"
    assert lines(tmp_path / "runs-k.log") == ["run"], "the remote body ran once"
    body = workflow_id_for(task.task_id, None) + "-body"
    assert remote_task_ids(await history_text(temporal_client, body)) == {remote_id}, (
        "re-attached, never re-created"
    )


@pytest.mark.chaos  # kills and restarts real processes
async def test_a_restarted_remote_is_reattached_and_completes(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    temporal_tasks: Callable[..., TemporalTasks],
    task_queue: str,
    tmp_path: Path,
) -> None:
    """Our durable remote is killed mid-wait and started again: the wait picks the
    same remote task up (its own worker finishes it) and our call completes."""
    peer = RemotePeer(
        "ours",
        tmp_path,
        temporal_server.address,
        task_queue,
        heartbeat_timeout_s=KILLED_WORKER_HEARTBEAT_S,
    )
    await peer.start()
    try:
        server = orchestrator(temporal_tasks(**orchestrator_tasks(peer.url)))
        async with Client(server) as client:
            arguments = {"marker_dir": str(tmp_path), "tag": "r"}
            task = await call_tool_task(
                client, "call_remote", {"tool": "count_and_wait", "arguments": arguments}
            )
            await eventually(lambda: lines(tmp_path / "runs-r.log") == ["run"])
            remote_id = await _recorded_remote_task(temporal_client, task.task_id)
            peer.kill()
            await peer.start()
            (tmp_path / "release-r").write_text("")
            final = await task.wait(timeout=120)
    finally:
        peer.stop()
    assert report_of(final)["text"] == "r done"
    body = workflow_id_for(task.task_id, None) + "-body"
    assert remote_task_ids(await history_text(temporal_client, body)) == {remote_id}


async def test_the_tour_relays_progress_and_questions_and_replays(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    temporal_tasks: Callable[..., TemporalTasks],
    task_queue: str,
    tmp_path: Path,
) -> None:
    """Fan-out, a followed task with relayed progress, a relayed question, a caught
    failure -- then both histories replay, and so does the recorded one."""
    peer = RemotePeer("ours", tmp_path, temporal_server.address, task_queue)
    await peer.start()
    try:
        server = orchestrator(temporal_tasks(**orchestrator_tasks(peer.url)))
        async with Client(server, elicitation_handler=declares_elicitation) as client:
            task = await call_tool_task(client, "remote_tour", {"marker_dir": str(tmp_path)})
            parked = await task.wait(state="input_required", timeout=60)
            (key,) = parked.input_requests or {}
            await update_task(
                client.session,
                task.task_id,
                {key: {"action": "accept", "content": {"value": "red"}}},
            )
            seen: list[str | None] = []
            for _ in range(300):
                try:
                    state = await task.status()
                except MCPError as err:  # "Temporal was busy: ask again", as a client does
                    if not is_retryable_busy(err):
                        raise
                    await asyncio.sleep(0.1)
                    continue
                seen.append(state.status_message)
                if state.status_message == "tour is waiting":
                    break
                await asyncio.sleep(0.1)
            (tmp_path / "release-tour").write_text("")
            final = await task.wait(timeout=90)
    finally:
        peer.stop()
    assert "tour is waiting" in seen, f"the remote's status message is relayed: {seen[-5:]}"
    result = report_of(final)["result"]
    assert result[1:] == ["echo: 0", "echo: 1", "echo: 2", "tour done", "tour: red", "failed"]
    assert lines(tmp_path / "answers-tour.log") == ["red"], "answered exactly once"
    workflow_id = workflow_id_for(task.task_id, None)
    histories = {
        "": await temporal_client.get_workflow_handle(workflow_id).fetch_history(),
        ".body": await temporal_client.get_workflow_handle(workflow_id + "-body").fetch_history(),
    }
    replayer = task_replayer(WORKFLOWS)
    for history in histories.values():
        assert (await replayer.replay_workflow(history)).replay_failure is None
    if os.environ.get("RECORD_REMOTE_HISTORIES"):
        (HISTORIES / "remote").mkdir(exist_ok=True)
        for suffix, history in histories.items():
            (HISTORIES / f"{RECORDED}{suffix}.json").write_text(history.to_json())


@pytest.mark.parametrize("generation", GENERATIONS)
@pytest.mark.parametrize("suffix", ["", ".body"])
async def test_the_recorded_remote_tour_replays(generation: str, suffix: str) -> None:
    """The replay gate for remote calls: a recorded tour replays on today's code."""
    history = load_history(f"{generation}{suffix}")
    result = await task_replayer(WORKFLOWS).replay_workflow(history)
    assert result.replay_failure is None


@pytest.mark.chaos  # kills and restarts real processes
async def test_a_function_tool_remote_step_reattaches_after_a_crash(
    peer: RemotePeer,
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """Part 2: ``remote_step`` records the remote task id as a checkpoint, so the
    leg that re-runs after its worker died waits for the same remote task."""
    async with (
        orchestrating_worker(temporal_server, task_queue, peer, tmp_path) as workers,
        Client(front_end(temporal_client, task_queue, tools())) as client,
    ):
        task = await call_tool_task(
            client, "count_in_a_function_tool", {"marker_dir": str(tmp_path), "tag": "f"}
        )
        await eventually(lambda: lines(tmp_path / "runs-f.log") == ["run"])
        # Killed once the checkpoint is in history: the workflow has scheduled the
        # leg after the one that created the remote task (the waiting leg).
        handle = temporal_client.get_workflow_handle(workflow_id_for(task.task_id, None))
        await until_event(handle, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, count=2)
        await workers.kill_and_replace()
        (tmp_path / "release-f").write_text("")
        final = await task.wait(timeout=90)
    assert final.status == "completed" and final.result is not None, final
    assert final.result["content"][0]["text"] == "f done", final.result
    assert lines(tmp_path / "runs-f.log") == ["run"], "one remote task, its body run once"
