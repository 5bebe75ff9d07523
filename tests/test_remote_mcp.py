"""Workflow tools calling another MCP server (``remote``), over real HTTP to a real process.

The remote is our own ``TemporalTasks`` server or the peer ``fastmcp-tasks``
(``memory://``), each in its own process and requiring a bearer token that only
the orchestrating worker's connection knows.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path

from fastmcp import Client
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import call_tool_task, get_task, update_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from tests.helpers import declares_elicitation, eventually
from tests.remote_harness import (
    TOKEN,
    RemotePeer,
    history_text,
    lines,
    orchestrator,
    orchestrator_tasks,
    report_of,
    run_tool,
)


def remote_task_ids(history: str) -> set[str]:
    """Remote task ids as the call activity recorded them (``RemoteCallOutcome.task``)."""
    return set(re.findall(r'"task":\s*\{"task_id":\s*"([^"]+)"', history))


async def test_sync_calls_task_calls_and_the_token_stays_out_of_history(
    peer: RemotePeer,
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    tmp_path: Path,
) -> None:
    server = orchestrator(temporal_tasks(**orchestrator_tasks(peer.url)))
    async with Client(server) as client:
        echoed = report_of(await run_tool(client, "call_remote", _call("echo", text="hi")))
        refused = report_of(await run_tool(client, "call_remote", _call("oops", text="no")))
        listed = await run_tool(client, "list_remote_tools", {})
        (tmp_path / "release-a").write_text("")
        task = await call_tool_task(
            client,
            "call_remote",
            _call("count_and_wait", marker_dir=str(tmp_path), tag="a"),
        )
        final = await task.wait(timeout=90)
    assert echoed["text"] == "echo: hi" and not echoed["is_error"]
    assert refused["is_error"] and "oops: no" in refused["text"], "isError is returned"
    assert {"echo", "count_and_wait", "ask_color"} <= set(report_of(listed)["result"])
    assert report_of(final)["text"] == "a done"
    assert lines(tmp_path / "runs-a.log") == ["run"]
    body = await history_text(temporal_client, workflow_id_for(task.task_id, None) + "-body")
    assert len(remote_task_ids(body)) == 1, "the remote task id is recorded"
    assert "remote-local-first-wait" in body, "the patched path ran"
    assert '"markerName": "core_local_activity"' in body, "the first wait was a local activity"
    history = body + await history_text(temporal_client, workflow_id_for(task.task_id, None))
    assert TOKEN not in history and peer.url.split("//")[1] not in history


def _call(tool: str, **arguments: object) -> dict[str, object]:
    return {"tool": tool, "arguments": arguments}


async def test_failures_are_typed_errors(
    peer: RemotePeer, temporal_tasks: Callable[..., TemporalTasks]
) -> None:
    server = orchestrator(temporal_tasks(**orchestrator_tasks(peer.url)))
    async with Client(server) as client:
        unknown = report_of(await run_tool(client, "call_remote", _call("no_such_tool")))
        invalid = report_of(await run_tool(client, "call_remote", _call("echo", txt="typo")))
        protocol = report_of(await run_tool(client, "call_remote", _call("bad_widget")))
        failed = report_of(await run_tool(client, "call_remote", _call("fail_hard", reason="x")))
        down = report_of(
            await run_tool(
                client, "call_remote", {**_call("echo", text="?"), "server": "down", "attempts": 2}
            )
        )
        uncaught = await run_tool(
            client, "call_remote", {**_call("fail_hard", reason="y"), "catch": False}
        )
    # FastMCP answers an unknown tool with an isError result: returned, as the remote said.
    assert unknown["is_error"] and "no_such_tool" in unknown["text"], unknown
    assert protocol["error_type"] == "RemoteToolError" and protocol["code"] == -32602, protocol
    assert "bad widget" in protocol["error_message"]
    assert invalid["is_error"] and "text" in invalid["text"], "so are bad arguments"
    assert failed["error_type"] == "RemoteTaskError" and failed["remote_status"] == "failed"
    assert failed["remote_task_id"] and failed["remote_task_id"] in failed["error_message"]
    assert "fail_hard" in failed["error_message"] and "peer" in failed["error_message"]
    assert down["error_type"] == "RemoteUnavailable", down
    # Uncaught, the typed error ends our task as any raised error does.
    assert uncaught.status == "completed" and uncaught.result is not None
    assert uncaught.result["isError"]
    assert "disk on fire: y" in uncaught.result["content"][0]["text"]


async def test_a_remote_question_is_relayed_and_answered_once(
    peer: RemotePeer, temporal_tasks: Callable[..., TemporalTasks], tmp_path: Path
) -> None:
    server = orchestrator(temporal_tasks(**orchestrator_tasks(peer.url)))
    arguments = [{"marker_dir": str(tmp_path), "tag": tag} for tag in ("x", "y")]
    async with Client(server, elicitation_handler=declares_elicitation) as client:
        task = await call_tool_task(client, "fan_out", {"tool": "ask_color", "calls": arguments})
        asked: dict[str, object] = {}
        # The two questions may show together or one at a time: each gets its own colour.
        colours = iter(["blue", "green"])
        while len(asked) < 2:
            state = await task.wait(state="input_required", timeout=60)
            fresh = sorted(set(state.input_requests or {}) - set(asked))
            asked |= state.input_requests or {}
            answers = {
                key: {"action": "accept", "content": {"value": next(colours)}} for key in fresh
            }
            if answers:
                await update_task(client.session, task.task_id, answers)
            else:  # still showing a question already answered
                await asyncio.sleep(0.1)
        final = await task.wait(timeout=90)
    assert all(key.split(".", 1)[1].startswith("peer.") for key in asked), asked
    assert sorted(report_of(final)["result"]) in (["x: blue", "y: green"], ["x: green", "y: blue"])
    assert (
        len(lines(tmp_path / "answers-x.log")) == 1 and len(lines(tmp_path / "answers-y.log")) == 1
    )


async def test_cancelling_our_task_cancels_the_remote_task(
    peer: RemotePeer,
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    tmp_path: Path,
) -> None:
    server = orchestrator(temporal_tasks(**orchestrator_tasks(peer.url)))
    async with Client(server) as client:
        task = await call_tool_task(
            client, "call_remote", _call("count_and_wait", marker_dir=str(tmp_path), tag="c")
        )
        await eventually(lambda: lines(tmp_path / "runs-c.log") == ["run"])
        remote_id = await _recorded_remote_task(temporal_client, task.task_id)
        await task.cancel()
        assert (await task.wait(timeout=60)).status == "cancelled"
        # Our task reads cancelled at once; the workflow tool then cancels the
        # remote task -- on this server's worker, which must keep running meanwhile.
        async with peer.direct_client() as direct:
            final = await _eventually_status(direct, remote_id, "cancelled")
    body_events = await history_text(temporal_client, workflow_id_for(task.task_id, None) + "-body")
    assert final == "cancelled", " ".join(
        e[11:] for e in re.findall(r'"eventType": "([A-Z_]+)"', body_events)
    )


async def _recorded_remote_task(temporal_client: TemporalClient, task_id: str) -> str:
    """The remote task id, once the call activity's completion is in the body's history."""
    body = workflow_id_for(task_id, None) + "-body"
    for _ in range(300):
        ids = remote_task_ids(await history_text(temporal_client, body))
        if ids:
            (remote_id,) = ids
            return remote_id
        await asyncio.sleep(0.1)
    raise AssertionError("no remote task id in the body's history")


async def _eventually_status(client: Client, task_id: str, status: str) -> str:
    seen = ""
    for _ in range(900):  # a loaded machine can take a while
        seen = (await get_task(client.session, task_id)).status
        if seen == status:
            break
        await asyncio.sleep(0.1)
    return seen
