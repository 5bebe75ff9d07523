"""Workflow tools calling an MCP server over stdio (``RemoteServer.stdio``).

The worker starts the remote itself (``tests.processes.stdio_peer``, the tools of
``remote_peer``: ours on the session's Temporal, or the peer on ``memory://``) and
speaks MCP over its stdin and stdout. A remote task is followed by polling
``tasks/get`` (there is no ``subscriptions/listen`` over stdio). When the worker
stops, so does the process it started.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fastmcp import Client

from fastmcp_temporal import DevServer, LegPolicy, RemoteServer, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from tests.helpers import eventually, needs_peer
from tests.processes.running import ROOT
from tests.remote_harness import lines, orchestrator, report_of, run_tool

SCRIPT = "tests.processes.stdio_peer"


def stdio_connection(kind: str, tag: str, address: str, task_queue: str) -> RemoteServer:
    args = ["-m", SCRIPT, "--kind", kind, "--tag", tag]
    if kind == "ours":
        args += ["--address", address, "--task-queue", f"{task_queue}-remote"]
    return RemoteServer.stdio(sys.executable, args, cwd=str(ROOT))


def running(tag: str) -> bool:
    """Whether a stdio remote started with ``--tag tag`` is still running."""
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
    tag = f"{kind}-{tmp_path.name}"
    connection = stdio_connection(kind, tag, temporal_server.address, task_queue)
    tasks = temporal_tasks(
        remote_servers={"peer": connection}, leg_policy=LegPolicy(heartbeat_timeout_s=2)
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
