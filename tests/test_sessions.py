"""2025-xx sessions any front end serves (``fastmcp_temporal.server.protocol.sessions``).

Two front ends as real processes (``tests.processes.session_server``: uvicorn, no
worker, one scope secret) share the session's Temporal; the legs run in this
test's worker. A client that ``initialize``d on front end A goes on with front end
B, as behind a load balancer without sticky sessions:

- a raw 2025-06-18 client (as Codex speaks it: ``Mcp-Session-Id``, a GET stream):
  its plain call and its task-augmented call (SEP-1686's ``task``, which SEP-2663
  says to ignore on 2025-xx) are durable calls answered by B with their progress,
  and B's GET stream carries what B sends outside a request;
- the MCP Python SDK's ``ClientSession``, A killed under it: its GET stream
  reopens on B, its calls are answered there, a question a task asks reaches it
  because B knows the ``elicitation`` it declared to A;
- an id is its caller's and its deployment's: another caller's token, a tampered
  id, a front end with another secret all answer what an unknown session always
  got (``404``), also on A, where the session lives, for a caller the SDK alone
  would have let in (its check ignores a subject that is only in the claims);
- an ``initialize`` too big to seal gets the SDK's own session, served by its
  front end; a ``DELETE``d id is refused where it was deleted.

The seal itself: ``tests/test_session_seal.py``; hostile ids against a fleet and
logouts across it: ``tests/test_session_ids.py``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastmcp.server.http as fastmcp_http
import httpx
import httpx2
import mcp_types
import pytest
import uvicorn
from fastmcp import FastMCP
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import DevServer, McpTasksPlugin, TemporalTasks
from fastmcp_temporal.server.core.settings import env_var
from fastmcp_temporal.server.protocol.portable_sessions import PortableSessions
from fastmcp_temporal.server.protocol.sessions import MAX_ID_CHARS, SessionSeal
from tests.helpers import eventually
from tests.ports import free_port, run_server_async
from tests.processes.running import Process
from tests.processes.session_server import tools
from tests.test_sync_calls import count_workflows

PROTOCOL = "2025-06-18"  # what Codex speaks
DAY_S = 86_400.0
SECRET = "one deployment's scope secret"
OTHER_SECRET = "another deployment's secret!"
UNKNOWN = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Session not found"}}


@dataclass
class FrontEnd:
    process: Process
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


StartFrontEnd = Callable[..., Awaitable[FrontEnd]]


@pytest.fixture
async def front_end(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> AsyncIterator[StartFrontEnd]:
    """Starts front ends of one deployment (``secret``) on this test's queue; the legs run here."""
    started: list[Process] = []

    async def start(name: str, *, secret: str = SECRET, auth: bool = False) -> FrontEnd:
        port = free_port()
        args = [temporal_server.address, task_queue, str(port), *(["auth"] if auth else [])]
        process = Process(
            name,
            [sys.executable, "-m", "tests.processes.session_server", *args],
            {env_var("scope_secret"): secret},
            tmp_path / f"{name}.log",
        )
        started.append(process)
        await process.wait_for_port(port)
        return FrontEnd(process, port)

    async with Worker(temporal_client, task_queue=task_queue, plugins=[McpTasksPlugin(tools)]):
        try:
            yield start
        finally:
            for process in started:
                process.stop()


# -- a raw 2025-06-18 client ------------------------------------------------------


@dataclass
class Answer:
    status: int
    frames: list[dict[str, Any]]
    session_id: str | None

    @property
    def text(self) -> str:
        (response,) = [frame for frame in self.frames if "id" in frame]
        (block,) = response["result"]["content"]
        return str(block["text"])

    def notifications(self, method: str) -> list[dict[str, Any]]:
        return [frame["params"] for frame in self.frames if frame.get("method") == method]


@dataclass
class Handshake:
    """A raw 2025-06-18 client: ``initialize``, then ``Mcp-Session-Id`` on each request
    to the front end the test names, server messages on a GET stream. ``protocol`` is
    the version its requests name once it has an id (another client's session may
    have negotiated another)."""

    http: httpx.AsyncClient
    user: str | None = None
    session_id: str | None = None
    protocol: str = PROTOCOL
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def headers(self) -> dict[str, str]:
        headers = {"accept": "application/json, text/event-stream"}
        if self.session_id is not None:
            headers |= {"mcp-session-id": self.session_id, "mcp-protocol-version": self.protocol}
        if self.user is not None:
            headers["authorization"] = f"Bearer user-{self.user}"
        return headers

    async def initialize(self, url: str, capabilities: dict[str, Any] | None = None) -> None:
        hello = {
            "protocolVersion": PROTOCOL,
            "capabilities": {"elicitation": {}} if capabilities is None else capabilities,
            "clientInfo": {"name": "codex-like", "version": "1"},
        }
        answer = await self.request(url, "initialize", hello)
        assert answer.status == 200 and answer.session_id is not None, answer
        (response,) = answer.frames
        assert response["result"]["protocolVersion"] == PROTOCOL
        self.session_id = answer.session_id
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (
            await self.http.post(url, json=initialized, headers=self.headers())
        ).status_code == 202

    async def request(self, url: str, method: str, params: dict[str, Any]) -> Answer:
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        response = await self.http.post(url, json=message, headers=self.headers())
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            lines = response.text.splitlines()
            frames = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
        else:
            frames = [response.json()]
        return Answer(response.status_code, frames, response.headers.get("mcp-session-id"))

    @contextlib.asynccontextmanager
    async def listening(self, url: str) -> AsyncIterator[list[dict[str, Any]]]:
        """The session's GET stream on ``url``: what arrives on it, as it arrives."""
        heard: list[dict[str, Any]] = []
        headers = {**self.headers(), "accept": "text/event-stream"}
        async with self.http.stream("GET", url, headers=headers) as response:
            assert response.status_code == 200, await response.aread()

            async def read() -> None:
                async for line in response.aiter_lines():
                    if line.startswith("data:") and line[5:].strip():
                        heard.append(json.loads(line[5:]))

            reader = asyncio.create_task(read())
            try:
                yield heard
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader


def http_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=httpx.Timeout(60, read=None))


async def test_a_session_begun_on_one_front_end_is_served_by_another(
    front_end: StartFrontEnd, temporal_client: TemporalClient, task_queue: str
) -> None:
    a, b = await front_end("a"), await front_end("b")
    async with http_client() as http:
        client = Handshake(http)
        await client.initialize(a.url)
        async with client.listening(b.url) as heard:
            counted = {"name": "count_to", "arguments": {"n": 3}, "_meta": {"progressToken": "p"}}
            plain = await client.request(b.url, "tools/call", counted)
            augmented = {"name": "count_to", "arguments": {"n": 2}, "task": {"ttl": 60_000}}
            tasked = await client.request(b.url, "tools/call", augmented)
            announced = await client.request(
                b.url, "tools/call", {"name": "announce", "arguments": {"uri": "memo://b"}}
            )
            await eventually(lambda: bool(heard), timeout=10)
    assert (plain.status, plain.text) == (200, "counted to 3")
    progress = plain.notifications("notifications/progress")
    assert (progress[-1]["progress"], progress[-1]["total"]) == (3, 3)  # relayed by B
    assert (tasked.status, tasked.text) == (200, "counted to 2")
    assert announced.text == "announced"
    assert heard == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "memo://b"},
        }
    ]
    assert await count_workflows(temporal_client, task_queue, 2) == 2  # both calls were tasks


# -- the MCP Python SDK's client, its front end killed -------------------------------


class Balancer(httpx2.AsyncBaseTransport):
    """A load balancer in the client: each request goes to the front end ``target`` names."""

    def __init__(self, ports: dict[str, int]) -> None:
        self.ports = ports
        self.target = next(iter(ports))
        #: ``(front end, HTTP method)`` of each request, in order.
        self.sent: list[tuple[str, str]] = []
        self._http = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append((self.target, request.method))
        request.url = request.url.copy_with(port=self.ports[self.target])
        return await self._http.handle_async_request(request)

    async def aclose(self) -> None:
        await self._http.aclose()


async def test_the_sdk_client_carries_on_when_its_front_end_is_killed(
    front_end: StartFrontEnd, temporal_client: TemporalClient, task_queue: str
) -> None:
    a, b = await front_end("a"), await front_end("b")
    balancer = Balancer({"a": a.port, "b": b.port})
    heard: list[mcp_types.ServerNotification | Exception] = []
    asked: list[str] = []
    progress: list[float] = []

    async def on_message(message: mcp_types.ServerNotification | Exception) -> None:
        heard.append(message)

    async def on_elicit(
        _: Any, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with (
        httpx2.AsyncClient(transport=balancer, timeout=httpx2.Timeout(30, read=300)) as http,
        streamable_http_client(a.url, http_client=http) as (read, write),
        ClientSession(read, write, elicitation_callback=on_elicit, message_handler=on_message) as s,
    ):
        await s.initialize()
        assert s.protocol_version == "2025-11-25"
        await eventually(lambda: ("a", "GET") in balancer.sent)  # its GET stream is on A
        balancer.target = "b"
        a.process.signal(signal.SIGKILL)  # A's sessions and its GET stream die with it
        assert await a.process.exit_code() == -signal.SIGKILL
        counted = await s.call_tool("count_to", {"n": 2}, progress_callback=on_progress)
        greeted = await s.call_tool("greet", {})
        # The client reopens its GET stream a second after A is gone, on B: what B sends
        # outside a request reaches it once it is open (nothing keeps what came before).
        await eventually(lambda: ("b", "GET") in balancer.sent, timeout=30)
        for _ in range(60):
            await s.call_tool("announce", {"uri": "memo://after-a"})
            if updates(heard):
                break
            await asyncio.sleep(0.5)
    assert [block.text for block in counted.content] == ["counted to 2"]  # type: ignore[union-attr]
    assert progress[-1] == 2
    assert [block.text for block in greeted.content] == ["hello Ada"]  # type: ignore[union-attr]
    assert asked == ["Your name?"]  # asked live by B: it knows the client declared elicitation
    assert updates(heard) and set(updates(heard)) == {"memo://after-a"}
    assert await count_workflows(temporal_client, task_queue, 2) == 2


def updates(heard: list[mcp_types.ServerNotification | Exception]) -> list[str]:
    return [
        str(message.params.uri)
        for message in heard
        if isinstance(message, mcp_types.ResourceUpdatedNotification)
    ]


# -- whose the id is ----------------------------------------------------------------


async def test_an_id_is_only_its_callers_and_only_its_deployments(
    front_end: StartFrontEnd,
) -> None:
    a, b = await front_end("a", auth=True), await front_end("b", auth=True)
    other = await front_end("other-deployment", secret=OTHER_SECRET, auth=True)
    listing: dict[str, Any] = {}
    async with http_client() as http:
        alice = Handshake(http, user="alice")
        await alice.initialize(a.url)
        assert alice.session_id is not None
        bob = Handshake(http, user="bob", session_id=alice.session_id)
        middle = len(alice.session_id) // 2
        flipped = "A" if alice.session_id[middle] != "A" else "B"
        tampered = alice.session_id[:middle] + flipped + alice.session_id[middle + 1 :]
        refused = {
            "bob on a": await bob.request(a.url, "tools/list", listing),
            "bob on b": await bob.request(b.url, "tools/list", listing),
            "tampered on b": await Handshake(http, "alice", tampered).request(
                b.url, "tools/list", listing
            ),
            "another deployment": await alice.request(other.url, "tools/list", listing),
            "the SDK's unknown id": await Handshake(http, "alice", "0" * 32).request(
                b.url, "tools/list", listing
            ),
        }
        served = await alice.request(b.url, "tools/list", listing)
    for who, answer in refused.items():
        assert (answer.status, answer.frames) == (404, [UNKNOWN]), who
    assert served.status == 200
    assert {tool["name"] for tool in served.frames[0]["result"]["tools"]} >= {"count_to"}


# -- too big to seal; DELETE ------------------------------------------------------


async def test_an_initialize_too_big_to_seal_gets_the_sdks_own_session(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    """Served by the front end that opened it, as every session was before."""
    served = FastMCP("in-process")
    served.add_extension(temporal_tasks(scope_secret=SECRET))
    served.mount(tools)
    noise = base64.b64encode(os.urandom(MAX_ID_CHARS)).decode()  # does not compress
    async with run_server_async(served) as url, http_client() as http:
        sealed, big = Handshake(http), Handshake(http)
        await sealed.initialize(url)
        await big.initialize(url, {"experimental": {"x": {"noise": noise}}})
        listed = await big.request(url, "tools/list", {})
    assert sealed.session_id is not None and SessionSeal.minted(sealed.session_id)
    assert big.session_id is not None and re.fullmatch("[0-9a-f]{32}", big.session_id)
    assert listed.status == 200


async def test_a_deleted_session_is_refused_where_it_was_deleted(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    """Before, the front end rebuilt it from its id at the next request."""
    served = FastMCP("in-process")
    served.add_extension(temporal_tasks(scope_secret=SECRET))
    served.mount(tools)
    async with run_server_async(served) as url, http_client() as http:
        client = Handshake(http)
        await client.initialize(url)
        listed = await client.request(url, "tools/list", {})
        deleted = await http.delete(url, headers=client.headers())
        after = await client.request(url, "tools/list", {})
    assert (listed.status, deleted.status_code) == (200, 200)
    assert (after.status, after.frames) == (404, [UNKNOWN])


async def test_another_server_in_the_process_is_stock_fastmcp(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    """Only the server with ``TemporalTasks`` gets the seam: no FastMCP or SDK name changes."""
    manager = fastmcp_http.FastMCPStreamableHTTPSessionManager
    served = FastMCP("in-process")
    served.add_extension(temporal_tasks(scope_secret=SECRET))
    served.mount(tools)
    stock = FastMCP("stock")

    @stock.tool
    def hello() -> str:
        return "hello"

    assert "http_app" in vars(served) and "http_app" not in vars(stock)
    assert [entry.cls for entry in stock.http_app().user_middleware] == [
        entry.cls for entry in FastMCP("another stock").http_app().user_middleware
    ]
    assert PortableSessions in [entry.cls for entry in served.http_app().user_middleware]
    stock_app = stock.http_app()
    (endpoint,) = [route.endpoint for route in stock_app.routes if route.path == "/mcp"]
    async with (
        serving(served.http_app()) as ours,
        serving(stock_app) as theirs,
        http_client() as http,
    ):
        sealed, plain = Handshake(http), Handshake(http)
        await sealed.initialize(ours)
        await plain.initialize(theirs)
        said = await plain.request(theirs, "tools/call", {"name": "hello", "arguments": {}})
        assert type(endpoint.session_manager) is manager  # FastMCP's own, while ours serves
        assert fastmcp_http.FastMCPStreamableHTTPSessionManager is manager
        assert manager.__module__ == "fastmcp.server.http"
    assert sealed.session_id is not None and SessionSeal.minted(sealed.session_id)
    assert plain.session_id is not None and re.fullmatch("[0-9a-f]{32}", plain.session_id)
    assert said.text == "hello"


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """``app`` under uvicorn on 127.0.0.1 (its lifespan too); yields its MCP URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    running = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not running.done(), "uvicorn exited"
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await running


async def test_a_session_the_sdk_ended_here_is_rebuilt_on_its_next_request(
    temporal_tasks: Callable[..., TemporalTasks], caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK ends a session idle for ``session_idle_timeout`` (FastMCP's ``http_app``
    setting); the sealed id goes on: the next request rebuilds it, and the client sees
    nothing of it."""
    served = FastMCP("in-process")
    served.add_extension(temporal_tasks(scope_secret=SECRET))
    served.mount(tools)
    caplog.set_level("INFO", logger="fastmcp_temporal.server.protocol.portable_sessions")
    async with serving(served.http_app(session_idle_timeout=0.3)) as url, http_client() as http:
        client = Handshake(http)
        await client.initialize(url)
        first = await client.request(url, "tools/list", {})
        assert "rebuilt session" not in caplog.text
        await asyncio.sleep(1)  # idle past the timeout: the SDK ends its session
        second = await client.request(url, "tools/list", {})
    assert (first.status, second.status) == (200, 200)
    assert first.frames[0]["result"] == second.frames[0]["result"]
    assert "rebuilt session" in caplog.text
