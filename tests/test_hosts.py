"""Real MCP hosts call our task tools: Claude Code and the Codex CLI.

Each test runs a host's real binary (``tests/hosts``), non-interactive, with a fresh
home and a scripted model API on 127.0.0.1 whose first turn calls one of our
``task=True`` tools and whose next turn answers with what the tool returned. The
host makes a plain ``tools/call`` (no tasks extension: interactive Claude Code
declares it, ``claude -p`` does not) over streamable HTTP to a front end of ours in
its own process (``tests.processes.host_server``), on the session's Temporal: Claude
Code on 2026-07-28 (stateless), Codex on 2025-06-18 (a session and a GET stream); both
send a ``progressToken``. So a test sees what a user of the host would: the answer the
host printed.

- A plain call is answered with the tool's result, by one task workflow whose body
  ran once.
- Progress reaches the host: Codex logs each notification its client received;
  Claude Code's idle watchdog (``CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT``), which aborts a
  call that sent "no response or progress" for longer than its limit, lets a 33 s
  call with a 5 s limit finish because the body reports every second.
- A worker killed with ``-9`` mid-call: another worker runs the leg again and the
  host, still waiting, gets that run's result.
- A tool silent for longer than Claude Code's idle limit is still delivered: the
  server's keepalive progress (``FASTMCP_TEMPORAL_KEEPALIVE_S``) resets the watchdog.
- Codex's ``tool_timeout_sec`` cuts a call: it sends ``notifications/cancelled`` with a
  timeout's reason, which detaches the task; the model calls again with the same
  arguments, each call attaches to the one task, and the last gets its result -- the
  body ran once. A person's cancel (no timeout's reason) still cancels the task. With
  its limit known (``host_limits``), Codex is answered before it and calls again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import DevServer
from fastmcp_temporal.server.protocol.host_limits import is_host_timeout
from tests.helpers import eventually, kill, spawn_worker
from tests.hosts import HostRun, wire_log
from tests.hosts.claude_code import WATCHDOG_INTERVAL_S, ClaudeCode, idle_aborts, watchdog_ticks
from tests.hosts.codex import Codex, progress_received, tool_calls
from tests.hosts.model_api import ANSWER_PREFIX, ScriptedModel, ToolCall
from tests.hosts.wire_log import FROM_HOST, FROM_SERVER, WireMessage
from tests.plain_calls import PlainClient, task_status
from tests.ports import free_port
from tests.processes.running import Process
from tests.test_sync_calls import count_workflows
from tests.test_sync_calls_lifecycle import wait_status

Host = Callable[[Path, str, str], ClaudeCode | Codex]
HOSTS = [pytest.param(ClaudeCode, id="claude-code"), pytest.param(Codex, id="codex")]
#: The protocol version each host speaks to us.
WIRE = {ClaudeCode: "2026-07-28", Codex: "2025-06-18"}


@dataclass(frozen=True)
class FrontEnd:
    url: str
    pid: int
    wire: Path

    def messages(self) -> list[WireMessage]:
        return wire_log.read(self.wire)


@asynccontextmanager
async def front_end(
    address: str,
    task_queue: str,
    tmp_path: Path,
    *,
    worker: bool = True,
    env: dict[str, str] | None = None,
) -> AsyncIterator[FrontEnd]:
    """Our server in its own process, with its own worker or none; stopped by PID."""
    port = free_port()
    wire = tmp_path / "wire.jsonl"
    args = [sys.executable, "-m", "tests.processes.host_server", address, task_queue, str(port)]
    args += [str(wire), "worker" if worker else "no-worker"]
    process = Process("front-end", args, env or {}, tmp_path / "front-end.log")
    try:
        await process.wait_for_port(port)
        yield FrontEnd(f"http://127.0.0.1:{port}/mcp", process.pid, wire)
    finally:
        process.stop()


def runs_dir(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    return runs


def markers(runs: Path, kind: str) -> list[int]:
    """The PID of each ``run`` (a body began) or ``done`` (one finished) marker, sorted."""
    return sorted(int(marker.name.split("-")[1]) for marker in runs.glob(f"{kind}-*"))


def the_call(messages: list[WireMessage], tool: str) -> WireMessage:
    """The one ``tools/call`` of ``tool`` the host sent."""
    calls = [m for m in messages if m.sender == FROM_HOST and m.method == "tools/call"]
    (call,) = [m for m in calls if m.message["params"]["name"] == tool]
    return call


def progress_sent(messages: list[WireMessage], call: WireMessage) -> list[WireMessage]:
    """The progress notifications the server sent for ``call``, in order."""
    token = call.message["params"]["_meta"]["progressToken"]
    return [
        m
        for m in messages
        if m.sender == FROM_SERVER
        and m.method == "notifications/progress"
        and m.message["params"]["progressToken"] == token
    ]


def answer_of(messages: list[WireMessage], call: WireMessage) -> WireMessage:
    (answer,) = [
        m for m in messages if m.sender == FROM_SERVER and m.message.get("id") == call.message["id"]
    ]
    return answer


def longest_silence(messages: list[WireMessage], call: WireMessage) -> float:
    """The longest the host waited without a word from the server during ``call``."""
    heard = [call.at, *(m.at for m in progress_sent(messages, call)), answer_of(messages, call).at]
    return max(later - earlier for earlier, later in itertools.pairwise(heard))


def quoted(run: HostRun) -> str:
    """What the host's final answer quoted of the tool's result."""
    assert run.answer.startswith(ANSWER_PREFIX), run.answer
    return run.answer.removeprefix(ANSWER_PREFIX)


@pytest.mark.parametrize("host", HOSTS)
async def test_a_plain_call_is_answered_by_one_workflow_whose_body_ran_once(
    host: Host,
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    runs = runs_dir(tmp_path)
    call = ToolCall("count_steps", {"steps": 2, "runs": str(runs)})
    async with (
        front_end(temporal_server.address, task_queue, tmp_path) as server,
        ScriptedModel(call) as model,
    ):
        run = await host(tmp_path / "host", model.url, server.url).run()
        messages = server.messages()
    assert run.exit_code == 0, run.log[-3000:]
    assert f"counted 2 steps in process {server.pid}" in quoted(run)
    sent = the_call(messages, "count_steps")
    assert sent.protocol_version == WIRE[host]
    assert "task" not in sent.message["params"]  # a plain call: no tasks extension
    assert await count_workflows(temporal_client, task_queue, 1) == 1
    assert markers(runs, "run") == markers(runs, "done") == [server.pid]


async def test_codex_receives_each_progress_notification(
    temporal_server: DevServer,
    task_queue: str,
    tmp_path: Path,
) -> None:
    runs = runs_dir(tmp_path)
    call = ToolCall("count_steps", {"steps": 3, "runs": str(runs)})
    async with (
        front_end(temporal_server.address, task_queue, tmp_path) as server,
        ScriptedModel(call) as model,
    ):
        run = await Codex(tmp_path / "host", model.url, server.url).run()
        messages = server.messages()
    assert f"counted 3 steps in process {server.pid}" in quoted(run)
    received = progress_received(run)
    sent = progress_sent(messages, the_call(messages, "count_steps"))
    assert received == [m.message["params"].get("message") for m in sent]
    assert len(received) >= 2 and received[-1] == "step 3/3", received


async def test_claude_code_progress_keeps_its_idle_watchdog_from_aborting_the_call(
    temporal_server: DevServer,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """A 33 s call under a 5 s idle limit: the body reports every second, so each
    notification resets the watchdog, which looks at 30 s and lets the call wait."""
    runs = runs_dir(tmp_path)
    steps = WATCHDOG_INTERVAL_S + 3
    call = ToolCall("count_steps", {"steps": steps, "runs": str(runs)})
    async with (
        front_end(temporal_server.address, task_queue, tmp_path) as server,
        ScriptedModel(call) as model,
    ):
        claude = ClaudeCode(tmp_path / "host", model.url, server.url, idle_timeout_ms=5000)
        run = await claude.run()
        messages = server.messages()
    assert f"counted {steps} steps in process {server.pid}" in quoted(run)
    assert watchdog_ticks(run, "count_steps")  # it looked while the call waited
    assert idle_aborts(run, "count_steps") == []
    assert longest_silence(messages, the_call(messages, "count_steps")) < 5


@pytest.mark.chaos
@pytest.mark.parametrize("host", HOSTS)
async def test_a_worker_killed_mid_call_only_delays_the_answer(
    host: Host,
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """The front end runs no worker; the first worker process is killed (``-9``) while
    the body runs, a second one is started, and the host is still waiting for it."""
    runs = runs_dir(tmp_path)
    call = ToolCall("count_steps", {"steps": 4, "runs": str(runs)})
    address = temporal_server.address
    first = spawn_worker(address, task_queue, "tests.processes.host_tools")
    second = None
    try:
        async with (
            front_end(address, task_queue, tmp_path, worker=False) as server,
            ScriptedModel(call) as model,
        ):
            running = asyncio.create_task(host(tmp_path / "host", model.url, server.url).run())
            try:
                await eventually(lambda: markers(runs, "run") == [first.pid], timeout=60)
                kill(first)
                second = spawn_worker(address, task_queue, "tests.processes.host_tools")
                run = await running
            finally:
                running.cancel()  # the host is stopped with the test, whatever happened
    finally:
        kill(first)
        if second is not None:
            kill(second)
    assert f"counted 4 steps in process {second.pid}" in quoted(run)
    assert markers(runs, "run") == sorted([first.pid, second.pid])
    assert markers(runs, "done") == [second.pid]
    assert await count_workflows(temporal_client, task_queue, 1) == 1


async def test_a_tool_silent_past_claude_codes_idle_limit_is_kept_alive_by_the_server(
    temporal_server: DevServer,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """The body says nothing for 35 s; Claude Code's idle limit is 5 s and its watchdog
    looks at 30 s. The server's keepalive progress, every second here, is all the
    host hears: without it the host aborts ("sent no response or progress for 30s")
    and the result, which the workflow still completes, is lost to the user."""
    runs = runs_dir(tmp_path)
    seconds = WATCHDOG_INTERVAL_S + 5
    call = ToolCall("stay_silent", {"seconds": seconds, "runs": str(runs)})
    keepalive = {"FASTMCP_TEMPORAL_KEEPALIVE_S": "1"}
    async with (
        front_end(temporal_server.address, task_queue, tmp_path, env=keepalive) as server,
        ScriptedModel(call) as model,
    ):
        claude = ClaudeCode(tmp_path / "host", model.url, server.url, idle_timeout_ms=5000)
        run = await claude.run()
        messages = server.messages()
    assert idle_aborts(run, "stay_silent") == [], quoted(run)
    assert f"silent for {seconds} s in process {server.pid}" in quoted(run)
    assert watchdog_ticks(run, "stay_silent")
    assert longest_silence(messages, the_call(messages, "stay_silent")) < 5


async def test_codex_tool_timeout_detaches_and_the_call_made_again_attaches(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """``tool_timeout_sec = 5`` against a 12 s body: Codex gives up on each call at 5 s and
    tells the server (``notifications/cancelled``, reason "MCP request cancelled by
    caller", Codex's for a timeout), which detaches the task instead of cancelling it.
    The model, told the call timed out, calls again with the same arguments: each call
    attaches to the one task, and the third gets its result. The body ran once, in one workflow."""
    runs = runs_dir(tmp_path)
    call = ToolCall("stay_silent", {"seconds": 12, "runs": str(runs)})
    async with (
        front_end(temporal_server.address, task_queue, tmp_path) as server,
        ScriptedModel(call, again_when=("timed out",), max_calls=4) as model,
    ):
        run = await Codex(tmp_path / "host", model.url, server.url, tool_timeout_s=5).run()
        messages = server.messages()
    assert f"silent for 12 s in process {server.pid}" in quoted(run), model.results
    *timed_out, answered = tool_calls(run)
    assert answered["status"] == "completed"
    assert 2 <= len(timed_out) <= 3, tool_calls(run)
    for failed in timed_out:
        assert failed["status"] == "failed"
        assert "timed out awaiting tools/call after 5s" in failed["error"]["message"]
    cancelled: list[dict[str, Any]] = [
        m.message["params"]
        for m in messages
        if m.sender == FROM_HOST and m.method == "notifications/cancelled"
    ]
    assert len(cancelled) == len(timed_out)
    assert all(is_host_timeout(c.get("reason")) for c in cancelled), cancelled
    assert markers(runs, "run") == markers(runs, "done") == [server.pid]
    assert await count_workflows(temporal_client, task_queue, 1) == 1
    assert await task_status(temporal_client, task_queue) == "completed"


async def test_codex_with_its_limit_known_is_answered_before_it_and_calls_again(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """The front end knows this Codex's ``tool_timeout_sec`` (6 s, ``host_limits``): it
    answers each call at 3 s, before Codex gives up, saying the work goes on and to call
    again with the same arguments -- so Codex never cancels. The model does as told; the
    third call gets the 8 s body's result, from the one task."""
    runs = runs_dir(tmp_path)
    call = ToolCall("stay_silent", {"seconds": 8, "runs": str(runs)})
    limits = {"FASTMCP_TEMPORAL_HOST_LIMITS": '{"codex-mcp-client": 6}'}
    async with (
        front_end(temporal_server.address, task_queue, tmp_path, env=limits) as server,
        ScriptedModel(call, again_when=("still working",), max_calls=4) as model,
    ):
        run = await Codex(tmp_path / "host", model.url, server.url, tool_timeout_s=6).run()
        messages = server.messages()
    assert f"silent for 8 s in process {server.pid}" in quoted(run), model.results
    early = [result for result in model.results if "still working" in result]
    assert 2 <= len(early) <= 3, model.results
    assert all("call 'stay_silent' again with exactly the same arguments" in r for r in early)
    assert [m for m in messages if m.method == "notifications/cancelled"] == []
    assert markers(runs, "run") == markers(runs, "done") == [server.pid]
    assert await count_workflows(temporal_client, task_queue, 1) == 1


async def test_a_persons_cancel_still_cancels_the_task(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """The same front end as the hosts', a cancel without a timeout's reason (a FastMCP
    ``Client`` cancelling its call: "caller cancelled"): the task ends ``cancelled``."""
    runs = runs_dir(tmp_path)
    async with (
        front_end(temporal_server.address, task_queue, tmp_path) as server,
        PlainClient(server.url, mode="legacy") as client,
    ):
        calling = asyncio.create_task(
            client.call_tool("stay_silent", {"seconds": 60, "runs": str(runs)})
        )
        try:
            await wait_status(temporal_client, task_queue, "working", tool="stay_silent")
        finally:
            calling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await calling
        await wait_status(temporal_client, task_queue, "cancelled", tool="stay_silent")
        messages = server.messages()
    (cancel,) = [m for m in messages if m.method == "notifications/cancelled"]
    assert not is_host_timeout(cancel.message["params"].get("reason"))
    assert markers(runs, "done") == []
