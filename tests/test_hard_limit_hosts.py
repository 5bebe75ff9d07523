"""Real hosts whose limit on a tool call is hard: the Gemini CLI, Cline and the Continue CLI.

Each test runs a host's real binary headless (``tests/hosts``) against a scripted
model on 127.0.0.1 and our front end in its own process (``tests.processes.host_server``),
as ``tests/test_hosts.py`` does. These hosts end every tool call at a fixed time,
whatever the server sends meanwhile -- Gemini CLI at its per-server ``timeout`` (600 s
by default), Cline at its per-server ``timeout`` (60 s), Continue at its MCP SDK's
60 s, which no setting changes -- and then send ``notifications/cancelled`` with the
reason "McpError: MCP error -32001: Request timed out" (measured, all three).

- **The host's timeout detaches** (Gemini CLI and Cline, their ``timeout`` set to 4 s,
  a 5 s body): the task runs on; the model, told the call timed out, calls again with
  the same arguments; that call attaches to the task and gets its result. The body
  ran once, in one workflow.
- **Before the hard limit, the server answers** (all three, with their default
  settings; the server is told the host's limit is 8 s with ``host_limits``, the
  setting a user changes too, so no test waits 60 s or 600 s): the model is told in
  plain words that the work goes on and to call again with the same arguments; it
  does, and gets the result. No host timed out, the body ran once. Each host is
  known to the built-in table by the ``clientInfo`` it really sends.
- **A person's cancel still cancels** a task a real host left: Cline is answered
  before its limit and its user walks away (the model does not call again); a
  ``tasks/cancel`` of that task cancels it, and the body never finishes.

Continue's own 60 s timeout is not waited for here: it is the same TypeScript SDK
timeout as Cline's configured one, with the same reason (measured once: 60.1 s, then
"McpError: MCP error -32001: Request timed out"), and the detach path does not look
at which host sent it. Two of the hosts' own rules bound how often a model may call
again in one run: Gemini CLI stops a turn at the fifth identical tool call in a row
(its loop detection), and Cline ends the run after three or four failed tool calls in
a row ("max consecutive mistakes reached (3) in yolo mode"; a timeout and the
server's early answer, a tool error, both count) -- so every test here ends within
three calls. They run in the first CI suite only (not ``every_line``): they check the
hosts' behaviour through our engine, the same on every FastMCP line, and
``tests/test_hosts.py`` covers each line's HTTP transport with real hosts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import DevServer
from fastmcp_temporal.server.core.settings import env_var
from fastmcp_temporal.server.protocol.early_answers import STILL_RUNNING_META
from fastmcp_temporal.server.protocol.host_limits import hard_limit_s, is_host_timeout
from tests.hosts import HostRun
from tests.hosts.cline import Cline
from tests.hosts.continue_cli import ContinueCli
from tests.hosts.gemini_cli import GeminiCli
from tests.hosts.model_api import ScriptedModel, ToolCall
from tests.hosts.wire_log import FROM_HOST, FROM_SERVER, WireMessage
from tests.plain_calls import count_workflows, task_status, wait_status
from tests.test_hosts import front_end, markers, quoted, runs_dir
from tests.wire import RawMcp

#: The reason each of these hosts gives when its timeout ends a call (the TypeScript
#: SDK's ``String(new McpError(-32001, "Request timed out"))``).
TIMED_OUT = "McpError: MCP error -32001: Request timed out"
#: How the model learns, in each host's words, that its call timed out (Cline: "MCP request
#: to \"durable\" timed out after 3s. ..."; Gemini CLI, Continue: "... Request timed out").
HOST_SAYS_TIMED_OUT = "timed out"
#: Words of the server's early answer the model acts on (``early_answers.still_running``).
CALL_AGAIN = "again with exactly the same arguments"
#: The hard limit the server is told a host has, in the tests of its early answer.
BELIEVED_LIMIT_S = 8
#: The most calls a test's model makes: Cline gives up after three failed calls in a row.
MAX_CALLS = 3


class Host(Protocol):
    async def run(self, timeout: float = 120) -> HostRun: ...


HostFactory = Callable[[Path, str, str], Host]


def gemini_cli(timeout_s: int | None = None) -> HostFactory:
    timeout_ms = None if timeout_s is None else timeout_s * 1000
    return lambda root, model, server: GeminiCli(root, model, server, timeout_ms=timeout_ms)


def cline(timeout_s: int | None = None) -> HostFactory:
    return lambda root, model, server: Cline(root, model, server, timeout_s=timeout_s)


@dataclass(frozen=True)
class RealHost:
    """A host with its default settings, and what it says about itself on the wire."""

    start: HostFactory
    #: The ``clientInfo.name`` it sends at ``initialize``.
    client_name: str
    #: Its hard limit on one tool call by default.
    default_limit_s: float
    #: Whether its ``tools/call`` asks for progress (Cline and Continue send no ``_meta``).
    asks_for_progress: bool


HOSTS = {
    "gemini-cli": RealHost(gemini_cli(), "gemini-cli-mcp-client", 600, True),
    "cline": RealHost(cline(), "@cline/core", 60, False),
    "continue-cli": RealHost(ContinueCli, "continue-cli-client", 60, False),
}


def calls(messages: list[WireMessage], tool: str) -> list[WireMessage]:
    """Every ``tools/call`` of ``tool`` the host sent, in order."""
    return [
        m
        for m in messages
        if m.sender == FROM_HOST
        and m.method == "tools/call"
        and m.message["params"]["name"] == tool
    ]


def cancels(messages: list[WireMessage]) -> list[dict[str, Any]]:
    """The params of every ``notifications/cancelled`` the host sent."""
    return [
        m.message["params"]
        for m in messages
        if m.sender == FROM_HOST and m.method == "notifications/cancelled"
    ]


def client_info(messages: list[WireMessage]) -> dict[str, Any]:
    (initialize,) = {
        json.dumps(m.message["params"]["clientInfo"]): m
        for m in messages
        if m.sender == FROM_HOST and m.method == "initialize"
    }.values()
    return initialize.message["params"]["clientInfo"]


def early_answers(messages: list[WireMessage]) -> list[dict[str, Any]]:
    """The server's answers before a host's limit, as they went on the wire."""
    return [
        m.message["result"]
        for m in messages
        if m.sender == FROM_SERVER
        and STILL_RUNNING_META in m.message.get("result", {}).get("_meta", {})
    ]


@pytest.mark.parametrize(
    "host", [pytest.param(gemini_cli(4), id="gemini-cli"), pytest.param(cline(4), id="cline")]
)
async def test_the_hosts_timeout_detaches_and_the_call_made_again_attaches(
    host: HostFactory,
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    runs = runs_dir(tmp_path)
    call = ToolCall("stay_silent", {"seconds": 5, "runs": str(runs)})
    async with (
        front_end(temporal_server.address, task_queue, tmp_path) as server,
        ScriptedModel(call, again_when=(HOST_SAYS_TIMED_OUT,), max_calls=MAX_CALLS) as model,
    ):
        run = await host(tmp_path / "host", model.url, server.url).run()
        messages = server.messages()
    assert f"silent for 5 s in process {server.pid}" in quoted(run), model.results
    made = calls(messages, "stay_silent")
    timed_out = made[:-1]  # the last call got the result
    assert timed_out, "the host's timeout did not fire"
    assert {json.dumps(c.message["params"]["arguments"]) for c in made} == {
        json.dumps(call.arguments)
    }
    assert [c["requestId"] for c in cancels(messages)] == [c.message["id"] for c in timed_out]
    assert all(c["reason"] == TIMED_OUT and is_host_timeout(c["reason"]) for c in cancels(messages))
    assert all(HOST_SAYS_TIMED_OUT in result for result in model.results[:-1]), model.results
    assert markers(runs, "run") == markers(runs, "done") == [server.pid]
    assert await count_workflows(temporal_client, task_queue, 1) == 1
    assert await task_status(temporal_client, task_queue) == "completed"


@pytest.mark.parametrize("name", list(HOSTS))
async def test_the_server_answers_before_the_hard_limit_and_the_call_made_again_gets_the_result(
    name: str,
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """The host with its default settings, the server told its limit is 8 s: it answers
    at 5 s (3 s before), and the 8 s body ends while the call made again waits."""
    host = HOSTS[name]
    runs = runs_dir(tmp_path)
    seconds = BELIEVED_LIMIT_S
    call = ToolCall("stay_silent", {"seconds": seconds, "runs": str(runs)})
    believed = {env_var("host_limits"): json.dumps({host.client_name: BELIEVED_LIMIT_S})}
    async with (
        front_end(temporal_server.address, task_queue, tmp_path, env=believed) as server,
        ScriptedModel(call, again_when=(CALL_AGAIN,), max_calls=MAX_CALLS) as model,
    ):
        run = await host.start(tmp_path / "host", model.url, server.url).run()
        messages = server.messages()
    assert f"silent for {seconds} s in process {server.pid}" in quoted(run), model.results
    told, *_ = model.results
    for words in ("is still working", "the work goes on", f"call 'stay_silent' {CALL_AGAIN}"):
        assert words in told, told
    made = calls(messages, "stay_silent")
    assert 2 <= len(made) <= MAX_CALLS and len(early_answers(messages)) == len(made) - 1
    assert {json.dumps(c.message["params"]["arguments"]) for c in made} == {
        json.dumps(call.arguments)
    }
    assert cancels(messages) == []  # the host's own limit never fired
    assert markers(runs, "run") == markers(runs, "done") == [server.pid]
    assert await count_workflows(temporal_client, task_queue, 1) == 1
    assert await task_status(temporal_client, task_queue) == "completed"
    # What the host says about itself, and what the server's table knows of it.
    assert client_info(messages)["name"] == host.client_name
    assert all(
        ("progressToken" in c.message["params"].get("_meta", {})) == host.asks_for_progress
        for c in made
    )
    assert hard_limit_s(host.client_name, {}) == host.default_limit_s, (
        f"the built-in table does not know {name}'s clientInfo {host.client_name!r}"
    )


async def test_a_persons_cancel_cancels_a_task_a_real_host_left(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """Cline is answered before its limit (the early answer leaves the task working and
    undelivered); its model does not call again. A person then cancels the task with
    ``tasks/cancel``, by the id the early answer carried: it ends ``cancelled``."""
    runs = runs_dir(tmp_path)
    call = ToolCall("stay_silent", {"seconds": 60, "runs": str(runs)})
    cline_host = HOSTS["cline"]
    believed = {env_var("host_limits"): json.dumps({cline_host.client_name: BELIEVED_LIMIT_S})}
    async with (
        front_end(temporal_server.address, task_queue, tmp_path, env=believed) as server,
        ScriptedModel(call) as model,
    ):
        run = await cline_host.start(tmp_path / "host", model.url, server.url).run()
        (early,) = early_answers(server.messages())
        assert await task_status(temporal_client, task_queue) == "working"
        task_id = early["_meta"][STILL_RUNNING_META]["taskId"]
        await RawMcp(server.url).result("tasks/cancel", {"taskId": task_id})
        await wait_status(temporal_client, task_queue, "cancelled")
    assert CALL_AGAIN in quoted(run)
    assert cancels(server.messages()) == []
    assert markers(runs, "run") == [server.pid] and markers(runs, "done") == []
