"""How a remote task call ends when someone else ends it: cancelled mid-create, by the remote's
own client, or gone (expired) -- real processes over real HTTP, as in ``test_remote_mcp``."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from fastmcp import Client
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.client_wire import cancel_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.workflows.remote_models import CALL_TOOL_ACTIVITY, CANCEL_TASK_ACTIVITY
from tests.helpers import eventually, needs_peer
from tests.histories.replay import HISTORIES, load_history, patch_ids, task_replayer
from tests.processes.remote_workflows import CallRemote
from tests.remote_harness import (
    RemotePeer,
    history_text,
    lines,
    orchestrator,
    orchestrator_tasks,
    report_of,
)
from tests.test_remote_mcp import _eventually_status, _recorded_remote_task

#: The replay gate's recorded histories of a call cancelled while its create was in
#: flight (patch ``remote-create-cancel``), one per generation of what that path does
#: in history, oldest first; ``RECORD_REMOTE_HISTORIES=1`` writes the newest (from the
#: run against our own remote).
CREATE_CANCEL_GENERATIONS = ["remote/remote_create_cancel"]


def _call(tool: str, tmp_path: Path, tag: str) -> dict[str, object]:
    return {"tool": tool, "arguments": {"marker_dir": str(tmp_path), "tag": tag}}


async def _body_history(temporal_client: TemporalClient, task_id: str) -> str:
    return await history_text(temporal_client, workflow_id_for(task_id, None) + "-body")


async def test_cancelled_while_the_remote_creates_the_task_it_is_cancelled_too(
    peer: RemotePeer,
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    tmp_path: Path,
) -> None:
    """The remote holds ``tools/call`` until the create activity's cancellation is in
    history; then it creates the task all the same, and that task ends cancelled."""
    server = orchestrator(temporal_tasks(**orchestrator_tasks(peer.url)))
    async with Client(server) as client:
        task = await call_tool_task(client, "call_remote", _call("slow_to_start", tmp_path, "s"))
        await eventually(lambda: lines(tmp_path / "asked-s.log") == ["asked"])
        await task.cancel()
        for _ in range(300):
            if "ACTIVITY_TASK_CANCEL_REQUESTED" in await _body_history(
                temporal_client, task.task_id
            ):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the create activity's cancellation never reached history")
        (tmp_path / "start-s").write_text("")  # only now does the remote create the task
        assert (await task.wait(timeout=60)).status == "cancelled"
        remote_id = await _recorded_remote_task(temporal_client, task.task_id)
        async with peer.direct_client() as direct:
            final = await _eventually_status(direct, remote_id, "cancelled")
    body = await _body_history(temporal_client, task.task_id)
    events = re.findall(r'"eventType": "([A-Z_]+)"', body)
    assert final == "cancelled", " ".join(events)
    # The peer may cancel its task before its body starts; ours may have started it.
    assert len(lines(tmp_path / "runs-s.log")) <= 1, "the remote body ran at most once"
    assert "remote-create-cancel" in body, "the patched path ran"
    workflow_id = workflow_id_for(task.task_id, None)
    histories = {
        "": await temporal_client.get_workflow_handle(workflow_id).fetch_history(),
        ".body": await temporal_client.get_workflow_handle(workflow_id + "-body").fetch_history(),
    }
    for history in histories.values():
        replayed = await task_replayer([CallRemote]).replay_workflow(history)
        assert replayed.replay_failure is None, "the cancel-during-create path replays"
    if os.environ.get("RECORD_REMOTE_HISTORIES") and peer.kind == "ours":
        for suffix, history in histories.items():
            recorded = HISTORIES / f"{CREATE_CANCEL_GENERATIONS[-1]}{suffix}.json"
            recorded.write_text(history.to_json())


@pytest.mark.parametrize("generation", CREATE_CANCEL_GENERATIONS)
@pytest.mark.parametrize("suffix", ["", ".body"])
async def test_the_recorded_cancel_during_create_replays(generation: str, suffix: str) -> None:
    """The replay gate for ``remote-create-cancel``: the recorded body took the patched
    path (the patch marker, then the cancel of the remote task the create made), and
    both histories replay on today's code."""
    history = load_history(f"{generation}{suffix}")
    if suffix == ".body":
        patches = patch_ids(history)
        activities = [
            event.activity_task_scheduled_event_attributes.activity_type.name
            for event in history.events
        ]
        assert "remote-create-cancel" in patches, patches
        assert activities.index(CANCEL_TASK_ACTIVITY) > activities.index(CALL_TOOL_ACTIVITY)
    result = await task_replayer([CallRemote]).replay_workflow(history)
    assert result.replay_failure is None, result.replay_failure


@pytest.mark.parametrize("kind", [pytest.param("ours"), pytest.param("peer", marks=needs_peer)])
async def test_a_remote_task_cancelled_by_someone_else_raises_cancelled(
    kind: str,
    temporal_server: DevServer,
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """The remote body runs once, then the remote's own client cancels its task."""
    peer = RemotePeer(kind, tmp_path, temporal_server.address, task_queue)
    await peer.start()
    try:
        server = orchestrator(temporal_tasks(**orchestrator_tasks(peer.url)))
        async with Client(server) as client:
            call = _call("count_and_wait", tmp_path, "o")
            task = await call_tool_task(client, "call_remote", call)
            await eventually(lambda: lines(tmp_path / "runs-o.log") == ["run"])
            remote_id = await _recorded_remote_task(temporal_client, task.task_id)
            async with peer.direct_client() as direct:
                await cancel_task(direct.session, remote_id)
            report = report_of(await task.wait(timeout=90))
    finally:
        peer.stop()
    assert report["error_type"] == "RemoteTaskError", report
    assert report["remote_status"] == "cancelled" and report["remote_task_id"] == remote_id
    assert remote_id in report["error_message"] and "count_and_wait" in report["error_message"]


@pytest.mark.chaos  # kills and restarts real processes
async def test_a_remote_task_that_is_gone_raises_expired(
    peer: RemotePeer,
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    tmp_path: Path,
) -> None:
    """The peer (``memory://``) restarted forgets its tasks: ``tasks/get`` answers not
    found, as after a TTL purge. (Ours keeps tasks in Temporal across a restart.)"""
    if peer.kind == "ours":
        pytest.skip("ours keeps its tasks across a restart; only the peer's are gone")
    server = orchestrator(temporal_tasks(**orchestrator_tasks(peer.url)))
    async with Client(server) as client:
        task = await call_tool_task(client, "call_remote", _call("count_and_wait", tmp_path, "g"))
        await eventually(lambda: lines(tmp_path / "runs-g.log") == ["run"])
        remote_id = await _recorded_remote_task(temporal_client, task.task_id)
        peer.kill()
        await peer.start()
        report = report_of(await task.wait(timeout=120))
    assert report["error_type"] == "RemoteTaskError", report
    assert report["remote_status"] == "expired" and report["remote_task_id"] == remote_id
    message = report["error_message"]
    assert remote_id in message and "peer" in message and "count_and_wait" in message, message
