"""A host that gives up does not destroy the work, and asking again gets the result (issue 51).

Plain calls from FastMCP clients and from a raw 2025-11-25 session (as the hosts'
TypeScript SDK speaks it), on the test's Temporal; every body run is counted:

- a ``notifications/cancelled`` whose reason says the request timed out (the Python
  SDK's "timed out after 3.0s" from a client's own timeout; "Request timed out" as
  the TypeScript SDK words it) detaches: the task runs on and completes; the same
  call made again attaches to it -- the body ran once;
- a closed stream without a cancel leaves the task undelivered: the call made again
  attaches too;
- a delivered result is not answered again; other arguments are a new task; a tool
  with ``attach_repeats=False`` runs again, and a timeout cancels its task;
- a person's cancel (no reason, another reason, ``tasks/cancel``) cancels;
- a host whose ``clientInfo`` names a hard limit is answered before it (a small
  limit set with ``host_limits``), and the calls made again end with the result.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import mcp_types
import pytest
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks, ToolOptions
from fastmcp_temporal.server.protocol.early_answers import STILL_RUNNING_META
from fastmcp_temporal.server.protocol.host_limits import (
    answer_within_s,
    hard_limit_s,
    is_host_timeout,
)
from tests.plain_calls import PlainClient, count_workflows, task_status, wait_status, workflows
from tests.ports import run_server_async
from tests.wire import RawMcp

BuildTasks = Callable[..., TemporalTasks]
HANDSHAKE = "2025-11-25"


def build(extension: TemporalTasks, runs: list[str]) -> FastMCP:
    mcp = FastMCP("host-limits")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def brew(seconds: float, blend: str = "house") -> str:
        runs.append(f"brew:{blend}")
        await asyncio.sleep(seconds)
        return f"{blend} brewed in {seconds:g} s"

    @mcp.tool(task=True)
    async def roll(seconds: float) -> str:
        runs.append("roll")
        await asyncio.sleep(seconds)
        return f"rolled #{len(runs)}"

    return mcp


@pytest.fixture
def runs() -> list[str]:
    """Each body run, in order (the legs run in this process's worker)."""
    return []


@contextlib.asynccontextmanager
async def serving(
    temporal_tasks: BuildTasks, runs: list[str], **options: Any
) -> AsyncIterator[str]:
    extension = temporal_tasks(tools={"roll": ToolOptions(attach_repeats=False)}, **options)
    async with run_server_async(build(extension, runs)) as url:
        yield url


@pytest.fixture
async def url(temporal_tasks: BuildTasks, runs: list[str]) -> AsyncIterator[str]:
    async with serving(temporal_tasks, runs) as server_url:
        yield server_url


class Handshake:
    """A raw 2025-11-25 streamable HTTP session: ``initialize`` with a ``clientInfo``, then
    ``tools/call`` POSTs answered on SSE, and ``notifications/cancelled`` with any reason."""

    def __init__(self, url: str, client_name: str = "raw-host") -> None:
        self.url = url
        self.client_name = client_name
        self._ids = itertools.count(1)
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(60, read=None))
        self._headers = {"Accept": "application/json, text/event-stream"}

    async def __aenter__(self) -> Handshake:
        hello = {
            "protocolVersion": HANDSHAKE,
            "capabilities": {},
            "clientInfo": {"name": self.client_name, "version": "1"},
        }
        init = await self._http.post(
            self.url,
            json={"jsonrpc": "2.0", "id": next(self._ids), "method": "initialize", "params": hello},
            headers=self._headers,
        )
        self._headers |= {
            "mcp-session-id": init.headers["mcp-session-id"],
            "mcp-protocol-version": HANDSHAKE,
        }
        await self.notify("notifications/initialized", None)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._http.aclose()

    async def notify(self, method: str, params: dict[str, Any] | None) -> None:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        response = await self._http.post(self.url, json=body, headers=self._headers)
        assert response.status_code == 202, response.text

    def next_id(self) -> int:
        return next(self._ids)

    async def call(
        self, name: str, arguments: dict[str, Any], request_id: int | None = None
    ) -> dict[str, Any]:
        """The JSON-RPC response to one ``tools/call`` (read from its SSE stream)."""
        request_id = request_id if request_id is not None else self.next_id()
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        request = self._http.build_request("POST", self.url, json=body, headers=self._headers)
        response = await self._http.send(request, stream=True)
        try:
            async for line in response.aiter_lines():
                if line.startswith("data:") and line[5:].strip():
                    message = json.loads(line[5:])
                    if message.get("id") == request_id:
                        return message
        finally:
            await response.aclose()
        raise AssertionError("the call's stream ended without its answer")

    async def cancelled_call(
        self,
        name: str,
        arguments: dict[str, Any],
        reason: str | None,
        temporal_client: TemporalClient,
        task_queue: str,
    ) -> None:
        """Call, wait until its task works, then cancel it with ``reason`` (``None``: none)."""
        request_id = self.next_id()
        calling = asyncio.create_task(self.call(name, arguments, request_id))
        try:
            await wait_status(temporal_client, task_queue, "working")
            params: dict[str, Any] = {"requestId": request_id}
            if reason is not None:
                params["reason"] = reason
            await self.notify("notifications/cancelled", params)
            await asyncio.sleep(1)  # the cancelled request is never answered
        finally:
            calling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await calling


def text_of(response: dict[str, Any]) -> str:
    assert "result" in response, response
    return " ".join(block["text"] for block in response["result"]["content"])


async def test_a_client_timeout_detaches_and_the_same_call_attaches(
    url: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    """The Python SDK's own timeout sends "timed out after 2.0s": the task runs on, and the
    same call made again (a new session, as a restarted host) gets its result."""
    async with PlainClient(url, mode="legacy") as client:
        with pytest.raises(MCPError, match="timed out"):
            await client.call_tool_mcp("brew", {"seconds": 6}, timeout=2)
        await asyncio.sleep(1)
        assert await task_status(temporal_client, task_queue) == "working"
        result = await client.call_tool("brew", {"seconds": 6})
    assert result.data == "house brewed in 6 s"
    assert runs == ["brew:house"]
    assert len(await workflows(temporal_client, task_queue)) == 1


@pytest.mark.parametrize(
    "reason",
    [
        "Request timed out",  # Gemini CLI
        "McpError: MCP error -32001: Request timed out",  # the TypeScript SDK's String(error)
        "AbortError: the server did not respond within 12000ms idle timeout",  # Qwen Code idle
        "MCP request cancelled by caller",  # Codex (rmcp), at its tool_timeout_sec
    ],
)
async def test_a_host_timeout_detaches_and_the_call_made_again_gets_the_finished_result(
    url: str, reason: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    async with Handshake(url) as host:
        await host.cancelled_call("brew", {"seconds": 3}, reason, temporal_client, task_queue)
        await wait_status(temporal_client, task_queue, "completed")
        answer = await host.call("brew", {"seconds": 3})
    assert text_of(answer) == "house brewed in 3 s"
    assert runs == ["brew:house"]


@pytest.mark.parametrize("reason", [None, "caller cancelled", "User pressed Esc"])
async def test_a_persons_cancel_cancels_the_task(
    url: str, reason: str | None, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    async with Handshake(url) as host:
        await host.cancelled_call("brew", {"seconds": 30}, reason, temporal_client, task_queue)
        await wait_status(temporal_client, task_queue, "cancelled")


async def test_a_closed_stream_leaves_the_task_for_the_call_made_again(
    url: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    """Claude Code gives up by closing the stream of its 2026-07-28 call, with no cancel
    (anonymous: it has no session, its calls are all anonymous callers')."""
    raw = RawMcp(url)
    params = {"name": "brew", "arguments": {"seconds": 4}}
    calling = asyncio.create_task(raw.call("tools/call", params, declare_tasks=False))
    await wait_status(temporal_client, task_queue, "working")
    calling.cancel()  # the connection drops before the answer
    with contextlib.suppress(asyncio.CancelledError):
        await calling
    status, answer = await raw.call("tools/call", params, declare_tasks=False)
    assert status == 200
    assert text_of(answer) == "house brewed in 4 s"
    assert runs == ["brew:house"]


async def test_a_closed_stream_on_the_handshake_wire_leaves_the_task_undelivered(
    url: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    """On 2025-11-25 the SDK keeps the handler of a call whose SSE stream closed; the
    server sees the client went away, so the same call made again attaches."""
    async with Handshake(url) as host:
        calling = asyncio.create_task(host.call("brew", {"seconds": 5}))
        await wait_status(temporal_client, task_queue, "working")
        calling.cancel()  # the call's stream closes unread; the session stays
        with contextlib.suppress(asyncio.CancelledError):
            await calling
        await asyncio.sleep(2)  # a tick or two for the server to see it
        answer = await host.call("brew", {"seconds": 5})
    assert text_of(answer) == "house brewed in 5 s"
    assert runs == ["brew:house"]


async def test_a_delivered_result_is_not_answered_again(
    url: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    async with Handshake(url) as host:
        await host.cancelled_call(
            "brew", {"seconds": 2}, "Request timed out", temporal_client, task_queue
        )
        first = await host.call("brew", {"seconds": 2})  # attaches, and delivers
        second = await host.call("brew", {"seconds": 2})  # a new task
    assert text_of(first) == text_of(second) == "house brewed in 2 s"
    assert runs == ["brew:house", "brew:house"]
    assert await count_workflows(temporal_client, task_queue, 2) == 2


async def test_of_two_calls_made_again_at_once_one_gets_the_result_the_other_runs_anew(
    url: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    """Both attach to the detached task; the one that takes its record answers its result,
    the other (a result is answered at most once) starts a task of its own."""
    async with Handshake(url) as host:
        await host.cancelled_call(
            "brew", {"seconds": 4}, "Request timed out", temporal_client, task_queue
        )
        answers = await asyncio.gather(
            host.call("brew", {"seconds": 4}), host.call("brew", {"seconds": 4})
        )
    assert [text_of(answer) for answer in answers] == ["house brewed in 4 s"] * 2
    assert runs == ["brew:house", "brew:house"]
    assert await count_workflows(temporal_client, task_queue, 2) == 2


async def test_other_arguments_start_a_new_task(
    url: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    async with Handshake(url) as host:
        await host.cancelled_call(
            "brew", {"seconds": 2}, "Request timed out", temporal_client, task_queue
        )
        answer = await host.call("brew", {"seconds": 2, "blend": "dark"})
    assert text_of(answer) == "dark brewed in 2 s"
    assert runs == ["brew:house", "brew:dark"]


async def test_a_tool_that_opts_out_runs_again_and_a_timeout_cancels_it(
    url: str, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    async with Handshake(url) as host:
        await host.cancelled_call(
            "roll", {"seconds": 30}, "Request timed out", temporal_client, task_queue
        )
        await wait_status(temporal_client, task_queue, "cancelled")
        answer = await host.call("roll", {"seconds": 1})
    assert text_of(answer) == "rolled #2"
    assert runs == ["roll", "roll"]


async def test_tasks_cancel_of_a_task_answered_early_makes_the_call_start_anew(
    temporal_tasks: BuildTasks, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    """The early answer names the task; a person cancels it with ``tasks/cancel`` (from a
    client that has the tasks extension). The same call made again is then a new task."""
    async with (
        serving(temporal_tasks, runs, host_limits={"cline": 4}) as url,
        Handshake(url, client_name="Cline") as host,
    ):
        first = await host.call("brew", {"seconds": 30})
        task_id = first["result"]["_meta"][STILL_RUNNING_META]["taskId"]
        await RawMcp(url).result("tasks/cancel", {"taskId": task_id})
        await wait_status(temporal_client, task_queue, "cancelled")
        again = await host.call("brew", {"seconds": 30})
        assert again["result"]["_meta"][STILL_RUNNING_META]["taskId"] != task_id
    assert runs == ["brew:house", "brew:house"]
    assert await count_workflows(temporal_client, task_queue, 2) == 2


async def test_the_on_host_timeout_setting_cancels_instead(
    temporal_tasks: BuildTasks, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    async with (
        serving(temporal_tasks, runs, on_host_timeout="cancel") as url,
        Handshake(url) as host,
    ):
        await host.cancelled_call(
            "brew", {"seconds": 30}, "Request timed out", temporal_client, task_queue
        )
        await wait_status(temporal_client, task_queue, "cancelled")


async def test_a_hard_limit_host_is_answered_before_its_limit_and_gets_the_result_by_calling_again(
    temporal_tasks: BuildTasks, runs: list[str], temporal_client: TemporalClient, task_queue: str
) -> None:
    """Cline's limit, set to 4 s here: each call is answered after 2 s with "still working",
    and the third call, made again as told, gets the 5 s body's result."""
    async with (
        serving(temporal_tasks, runs, host_limits={"cline": 4}) as url,
        Handshake(url, client_name="Cline") as host,
    ):
        answers = []
        while len(answers) < 5:
            answers.append(await host.call("brew", {"seconds": 5}))
            if not answers[-1]["result"].get("isError"):
                break
    *early, last = answers
    assert text_of(last) == "house brewed in 5 s"
    assert 2 <= len(early) <= 3, answers
    for answer in early:
        result = answer["result"]
        assert result["isError"] is True
        assert "call 'brew' again with exactly the same arguments" in text_of(answer)
        assert result["_meta"][STILL_RUNNING_META]["status"] == "working"
    task_ids = {answer["result"]["_meta"][STILL_RUNNING_META]["taskId"] for answer in early}
    assert len(task_ids) == 1
    assert runs == ["brew:house"]
    assert len(await workflows(temporal_client, task_queue)) == 1


async def test_a_fastmcp_client_named_as_a_hard_limit_host_is_answered_early(
    temporal_tasks: BuildTasks, runs: list[str]
) -> None:
    """A FastMCP ``Client`` that names itself Continue's CLI (limit 4 s here): its first
    call raises the early answer, its second gets the result of the one body run."""
    info = mcp_types.Implementation(name="continue-cli-client", version="1.5")
    async with (
        serving(temporal_tasks, runs, host_limits={"continue-cli-client": 4}) as url,
        PlainClient(url, mode="legacy", client_info=info) as client,
    ):
        with pytest.raises(ToolError, match="still working"):
            await client.call_tool("brew", {"seconds": 3})
        assert (await client.call_tool("brew", {"seconds": 3})).data == "house brewed in 3 s"
    assert runs == ["brew:house"]


@pytest.mark.parametrize(
    ("reason", "timeout"),
    [
        ("Request timed out", True),
        ("SdkError: Request timed out", True),
        ("McpError: MCP error -32001: Request timed out", True),
        ("AbortError: the server did not respond within 12000ms idle timeout", True),
        ("timed out after 30.0s", True),
        ("MCP request cancelled by caller", True),
        (None, False),
        ("caller cancelled", False),
        ("User cancelled the operation", False),
        ("AbortError: This operation was aborted", False),
    ],
)
def test_which_reasons_are_a_hosts_timeout(reason: str | None, timeout: bool) -> None:
    assert is_host_timeout(reason) is timeout


def test_host_limits_override_and_extend_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    assert hard_limit_s("Cline", {}) == 60
    assert hard_limit_s("gemini-cli-mcp-client-durable", {}) == 600
    assert hard_limit_s("qwen-cli-mcp-client-durable", {}) == 600
    assert hard_limit_s("codex-mcp-client", {}) is None
    assert hard_limit_s("codex-mcp-client", {"codex": 120, "*": 50}) == 120
    assert hard_limit_s("claude-code", {"*": 50}) == 50
    assert hard_limit_s("Cline", {"cline": 0}) is None
    assert hard_limit_s(None, {}) is None
    assert answer_within_s(60) == 54 and answer_within_s(600) == 540
    monkeypatch.setenv("FASTMCP_TEMPORAL_HOST_LIMITS", '{"cline": 600}')
    monkeypatch.setenv("FASTMCP_TEMPORAL_ON_HOST_TIMEOUT", "cancel")
    options = TemporalTasks()._options
    assert options.host_limits == {"cline": 600} and options.on_host_timeout == "cancel"
    with pytest.raises(ValueError, match="host_limits"):
        TemporalTasks(host_limits={"cline": -1})
    with pytest.raises(ValueError, match="on_host_timeout"):
        TemporalTasks(on_host_timeout="ignore")  # type: ignore[arg-type]
