"""A deployment of front ends behind one real round-robin HTTP proxy, for fleet tests.

``running_fleet`` starts ``size`` front ends (``tests.processes.session_server``: no
worker, one scope secret) and ``tests.processes.round_robin_proxy`` in front of them,
all real processes on 127.0.0.1; the test runs the legs in its own worker
(``legs_worker``: ``session_server.tools``); the ``fleet`` fixture is both, without
auth (import ``fleet_fixture``). ``Fleet.url`` is the one URL clients use. ``RawSession``
speaks the 2025-06-18 wire by hand, reading each POST's SSE answer as it arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import DevServer, McpTasksPlugin
from fastmcp_temporal.server.core.settings import env_var
from tests.ports import free_port
from tests.processes.running import Process
from tests.processes.session_server import tools

PROTOCOL = "2025-06-18"  # what Codex speaks
SECRET = "one deployment's scope secret"
T = TypeVar("T")


@dataclass
class Fleet:
    front_ends: list[Process]
    proxy: Process
    proxy_port: int
    http: httpx.AsyncClient

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.proxy_port}/mcp"

    async def log(self) -> list[dict[str, Any]]:
        """Every request the proxy forwarded: turn, upstream index, HTTP method, JSON-RPC."""
        response = await self.http.get(f"http://127.0.0.1:{self.proxy_port}/_proxy/log")
        return list(response.json())

    async def steer(self, upstream: int) -> None:
        """The proxy's next turn goes to front end ``upstream`` (round robin from there)."""
        await self.http.post(
            f"http://127.0.0.1:{self.proxy_port}/_proxy/next", json={"upstream": upstream}
        )

    async def served(self, predicate: Callable[[dict[str, Any]], bool]) -> int:
        """The front end that served the one request ``predicate`` picks from the log."""
        (entry,) = [entry for entry in await self.log() if predicate(entry)]
        return int(entry["upstream"])

    async def logged(self, picks: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The log's entry of the one request ``picks`` picks, once it has passed."""
        for _ in range(600):
            found = [entry for entry in await self.log() if picks(entry)]
            if found:
                (entry,) = found
                return entry
            await asyncio.sleep(0.05)
        raise AssertionError(f"no such request passed the proxy: {await self.log()}")

    async def served_by(self, session_id: str) -> list[int]:
        """The front end that served each request of ``session_id`` so far, in order."""
        return [entry["upstream"] for entry in await self.log() if entry["session"] == session_id]

    async def on(
        self, upstream: int, session_id: str, send: Callable[[], Awaitable[T]], tries: int = 50
    ) -> list[tuple[int, T]]:
        """``send`` (one request of ``session_id``), steered to front end ``upstream``, again
        until one reaches it (another caller's request may take the steered turn): each
        answer, with the front end that gave it."""
        answers: list[tuple[int, T]] = []
        served = await self.served_by(session_id)
        for _ in range(tries):
            await self.steer(upstream)
            answer = await send()
            before, served = len(served), await self.served_by(session_id)
            (landed,) = served[before:]
            answers.append((landed, answer))
            if landed == upstream:
                return answers
        raise AssertionError(f"{tries} requests steered to {upstream} all reached another")


@contextlib.asynccontextmanager
async def running_fleet(
    address: str,
    task_queue: str,
    logs: Path,
    *,
    size: int = 2,
    secret: str = SECRET,
    auth: bool = False,
) -> AsyncIterator[Fleet]:
    started: list[Process] = []
    try:
        ports = [free_port() for _ in range(size)]
        for index, port in enumerate(ports):
            args = [address, task_queue, str(port), *(["auth"] if auth else [])]
            started.append(
                Process(
                    f"front-end-{index}",
                    [sys.executable, "-m", "tests.processes.session_server", *args],
                    {env_var("scope_secret"): secret},
                    logs / f"front-end-{index}.log",
                )
            )
        proxy_port = free_port()
        proxy = Process(
            "proxy",
            [sys.executable, "-m", "tests.processes.round_robin_proxy", str(proxy_port)]
            + [str(port) for port in ports],
            {},
            logs / "proxy.log",
        )
        started.append(proxy)
        for process, port in zip(started, [*ports, proxy_port], strict=True):
            await process.wait_for_port(port)
        async with httpx.AsyncClient(timeout=httpx.Timeout(60, read=None)) as http:
            yield Fleet(started[:-1], proxy, proxy_port, http)
    finally:
        for process in started:
            process.stop()


def legs_worker(temporal_client: TemporalClient, task_queue: str) -> Worker:
    """The legs' worker; it tells Temporal of a leg's heartbeat at least every second (as
    the embedded worker does), so a cancelled leg hears it within about a second."""
    return Worker(
        temporal_client,
        task_queue=task_queue,
        plugins=[McpTasksPlugin(tools)],
        max_heartbeat_throttle_interval=timedelta(seconds=1),
    )


@pytest.fixture(name="fleet")
async def fleet_fixture(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> AsyncIterator[Fleet]:
    async with (
        legs_worker(temporal_client, task_queue),
        running_fleet(temporal_server.address, task_queue, tmp_path) as running,
    ):
        yield running


@dataclass
class Call:
    """One POST whose answer is an SSE stream, read as it arrives."""

    request_id: int
    frames: list[dict[str, Any]] = field(default_factory=list)
    status: int | None = None
    reader: asyncio.Task[None] | None = None

    async def frame(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first frame ``predicate`` picks, once it has arrived."""
        while True:
            for frame in self.frames:
                if predicate(frame):
                    return frame
            assert self.reader is not None
            if self.reader.done():
                self.reader.result()
                raise AssertionError(f"the stream ended without it: {self.frames}")
            await asyncio.sleep(0.02)

    async def result(self) -> dict[str, Any]:
        frame = await self.frame(lambda f: f.get("id") == self.request_id and "method" not in f)
        return frame


@dataclass
class RawSession:
    """A raw 2025-06-18 client of one session: ``Mcp-Session-Id`` on each request."""

    http: httpx.AsyncClient
    url: str
    user: str | None = None
    session_id: str | None = None
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _calls: list[Call] = field(default_factory=list)

    def headers(self) -> dict[str, str]:
        headers = {"accept": "application/json, text/event-stream"}
        if self.session_id is not None:
            headers |= {"mcp-session-id": self.session_id, "mcp-protocol-version": PROTOCOL}
        if self.user is not None:
            headers["authorization"] = f"Bearer user-{self.user}"
        return headers

    async def initialize(self, capabilities: dict[str, Any] | None = None) -> None:
        hello = {
            "protocolVersion": PROTOCOL,
            "capabilities": {"elicitation": {}} if capabilities is None else capabilities,
            "clientInfo": {"name": "codex-like", "version": "1"},
        }
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": "initialize"}
        response = await self.http.post(
            self.url, json={**message, "params": hello}, headers=self.headers()
        )
        assert response.status_code == 200, response.text
        self.session_id = response.headers["mcp-session-id"]
        assert await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}) == 202

    async def post(self, message: dict[str, Any]) -> int:
        """A notification or an answer: its HTTP status."""
        response = await self.http.post(self.url, json=message, headers=self.headers())
        return response.status_code

    async def call(self, method: str, params: dict[str, Any]) -> Call:
        """Send a request; its SSE answer is read in the background."""
        call = Call(next(self._ids))
        message = {"jsonrpc": "2.0", "id": call.request_id, "method": method, "params": params}
        opened = asyncio.Event()

        async def read() -> None:
            async with self.http.stream(
                "POST", self.url, json=message, headers=self.headers()
            ) as response:
                call.status = response.status_code
                opened.set()
                async for line in response.aiter_lines():
                    if line.startswith("data:") and line[5:].strip():
                        call.frames.append(json.loads(line[5:]))

        call.reader = asyncio.create_task(read())
        self._calls.append(call)
        reading = asyncio.ensure_future(opened.wait())
        await asyncio.wait({reading, call.reader}, return_when=asyncio.FIRST_COMPLETED)
        if call.reader.done():
            reading.cancel()
            call.reader.result()
        return call

    async def aclose(self) -> None:
        for call in self._calls:
            if call.reader is not None and not call.reader.done():
                call.reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                    await call.reader
