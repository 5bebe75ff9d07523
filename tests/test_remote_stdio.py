"""Workflow tools calling an MCP server over stdio (``RemoteServer.stdio``).

The worker starts the remote itself (``tests.processes.stdio_peer``, the tools of
``remote_peer``: ours on the session's Temporal, or the peer on ``memory://``) and
speaks MCP over its stdin and stdout. A remote task is followed by polling
``tasks/get`` (there is no ``subscriptions/listen`` over stdio). When the worker
stops, so does the process it started; when the process dies, the next step starts
another.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from fastmcp import Client
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import DevServer, LegPolicy, RemoteServer, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from tests.helpers import eventually, needs_peer
from tests.processes.remote_workflows import PATIENT_HEARTBEAT_S
from tests.processes.running import ROOT
from tests.remote_harness import history_text, lines, orchestrator, report_of, run_tool
from tests.test_remote_mcp import _recorded_remote_task, remote_task_ids

SCRIPT = "tests.processes.stdio_peer"


def stdio_connection(kind: str, tag: str, address: str, task_queue: str) -> RemoteServer:
    args = ["-m", SCRIPT, "--kind", kind, "--tag", tag]
    if kind == "ours":
        args += ["--address", address, "--task-queue", f"{task_queue}-remote"]
    return RemoteServer.stdio(sys.executable, args, cwd=str(ROOT))


def running(tag: str) -> bool:
    """Whether the stdio remote started with ``--tag tag`` (unique per test) still runs."""
    found = subprocess.run(["pgrep", "-f", f"{SCRIPT} .*--tag {tag}"], capture_output=True)
    return found.returncode == 0


def _call(tool: str, **arguments: object) -> dict[str, object]:
    return {"tool": tool, "arguments": arguments}


@pytest.mark.parametrize("kind", ["ours", pytest.param("peer", marks=needs_peer)])
async def test_stdio_calls_list_and_follow_a_task_and_the_process_stops_with_the_worker(
    kind: str,
    temporal_server: DevServer,
    temporal_tasks: Callable[..., TemporalTasks],
    task_queue: str,
    tmp_path: Path,
) -> None:
    tag = f"{kind}-{uuid.uuid4().hex}"
    connection = stdio_connection(kind, tag, temporal_server.address, task_queue)
    # Nothing is killed here and the remote body must run once: the patient timeout,
    # so that a leg starved on a loaded machine is not taken for lost and run again.
    tasks = temporal_tasks(
        remote_servers={"peer": connection},
        leg_policy=LegPolicy(heartbeat_timeout_s=PATIENT_HEARTBEAT_S),
    )
    (tmp_path / "release-t").write_text("")
    async with Client(orchestrator(tasks)) as client:
        echoed = report_of(await run_tool(client, "call_remote", _call("echo", text="hi")))
        refused = report_of(await run_tool(client, "call_remote", _call("oops", text="no")))
        unknown = report_of(await run_tool(client, "call_remote", _call("no_such_tool")))
        protocol = report_of(await run_tool(client, "call_remote", _call("bad_widget")))
        listed = report_of(await run_tool(client, "list_remote_tools", {}))
        task = await call_tool_task(
            client, "call_remote", _call("count_and_wait", marker_dir=str(tmp_path), tag="t")
        )
        followed = report_of(await task.wait(timeout=90))
        assert running(tag), "one process, started by the worker, serves every call"
    assert echoed["text"] == "echo: hi" and not echoed["is_error"], echoed
    assert refused["is_error"] and "oops: no" in refused["text"], "isError is returned"
    # FastMCP answers an unknown tool with an isError result, as over HTTP.
    assert unknown["is_error"] and "no_such_tool" in unknown["text"], unknown
    assert protocol["error_type"] == "RemoteToolError" and protocol["code"] == -32602, protocol
    assert {"echo", "count_and_wait", "ask_color"} <= set(listed["result"])
    assert followed["text"] == "t done", followed
    assert lines(tmp_path / "runs-t.log") == ["run"], "the remote body ran once"
    await eventually(lambda: not running(tag))


def pid_of(tag: str) -> int:
    found = subprocess.run(
        ["pgrep", "-f", f"{SCRIPT} .*--tag {tag}"], capture_output=True, text=True, check=True
    )
    (pid,) = found.stdout.split()
    return int(pid)


@pytest.mark.chaos  # kills a real process
@pytest.mark.parametrize("kind", ["ours", pytest.param("peer", marks=needs_peer)])
async def test_a_stdio_remote_that_dies_is_started_again_by_the_next_step(
    kind: str,
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    temporal_tasks: Callable[..., TemporalTasks],
    task_queue: str,
    tmp_path: Path,
) -> None:
    """The remote is killed mid-wait: the next wait starts a new process. Ours keeps
    its tasks in Temporal, so the new process finds the same remote task and our call
    completes; the peer (``memory://``) lost it with the process: gone, ``expired``."""
    tag = f"dies-{kind}-{uuid.uuid4().hex}"
    connection = stdio_connection(kind, tag, temporal_server.address, task_queue)
    tasks = temporal_tasks(
        remote_servers={"peer": connection}, leg_policy=LegPolicy(heartbeat_timeout_s=2)
    )
    async with Client(orchestrator(tasks)) as client:
        task = await call_tool_task(
            client, "call_remote", _call("count_and_wait", marker_dir=str(tmp_path), tag="d")
        )
        await eventually(lambda: lines(tmp_path / "runs-d.log") == ["run"])
        remote_id = await _recorded_remote_task(temporal_client, task.task_id)
        first = pid_of(tag)
        os.kill(first, signal.SIGKILL)
        (tmp_path / "release-d").write_text("")
        report = report_of(await task.wait(timeout=120))
        second = pid_of(tag)
    assert second != first, "a new process serves the connection"
    if kind == "ours":
        assert report["text"] == "d done", report
    else:
        assert report["error_type"] == "RemoteTaskError", report
        assert report["remote_status"] == "expired" and report["remote_task_id"] == remote_id
    body = workflow_id_for(task.task_id, None) + "-body"
    assert remote_task_ids(await history_text(temporal_client, body)) == {remote_id}, (
        "re-attached, never re-created"
    )
    await eventually(lambda: not running(tag))
