"""Named connections to other MCP servers, configured on the worker and kept open.

A ``RemoteServer`` says how to reach one server (streamable HTTP with headers or
a bearer token, or a stdio command); a factory returning a ``fastmcp.Client``
works too (``temporalio-mcp``'s ``MCPPlugin`` takes factories the same way).
``Connections`` keeps one open client per name and event loop, shared by every
activity of the worker: an MCP client's handshake (tens of milliseconds over
HTTP, a process start over stdio) is paid once, not per step. A connection
that fails is dropped and the next step opens a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from fastmcp_temporal.client import TasksClientExtension


@dataclass(frozen=True)
class RemoteServer:
    """How the worker reaches one MCP server: streamable HTTP or a stdio command.

    The token and headers are never put in workflow history (nor in this
    object's ``repr``).
    """

    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    bearer_token: str | None = field(default=None, repr=False)
    command: str | None = None
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = field(default=None, repr=False)
    cwd: str | None = None

    @classmethod
    def http(
        cls, url: str, *, headers: Mapping[str, str] | None = None, bearer_token: str | None = None
    ) -> RemoteServer:
        return cls(url=url, headers=dict(headers or {}), bearer_token=bearer_token)

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> RemoteServer:
        return cls(command=command, args=tuple(args), env=env, cwd=cwd)

    def __post_init__(self) -> None:
        if (self.url is None) == (self.command is None):
            raise ValueError("A RemoteServer has either a url (HTTP) or a command (stdio)")

    def http_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.bearer_token:
            headers["Authorization"] = f"Bearer {self.bearer_token}"
        return headers

    def client(self) -> Client[Any]:
        transport: StreamableHttpTransport | StdioTransport
        if self.url is not None:
            transport = StreamableHttpTransport(self.url, headers=self.http_headers())
        else:
            assert self.command is not None
            env = dict(self.env) if self.env is not None else None
            # Not kept alive past the client: ``Connections`` holds the client open
            # for as long as the process should run, and closing it must end it.
            transport = StdioTransport(
                self.command, list(self.args), env=env, cwd=self.cwd, keep_alive=False
            )
        return Client(
            transport,
            extensions=_tasks_extension(),
            elicitation_handler=_relayed_through_tasks_only,
            sampling_handler=_relayed_through_tasks_only,
        )


async def _relayed_through_tasks_only(*args: Any) -> Any:
    """Declares elicitation and sampling, so a remote *task* may ask for them (we relay
    its requests to our own client from ``tasks/get``); a synchronous call that asks
    in-band is refused: only task calls are durable enough to wait for a person."""
    raise RuntimeError(
        "A synchronous remote tool asked for input: only remote tasks can (make the tool a task)"
    )


ClientFactory = Callable[[], Client[Any]]
RemoteServers = Mapping[str, RemoteServer | ClientFactory]


def _tasks_extension() -> list[TasksClientExtension] | None:
    # The peer registers its own tasks extension on every Client when imported: two would clash.
    return None if "fastmcp_tasks" in sys.modules else [TasksClientExtension()]


class _OpenClient:
    """One client, entered and exited by a task of its own (anyio scopes need that)."""

    def __init__(self, client: Client[Any]) -> None:
        self.client = client
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._owner = asyncio.create_task(self._hold())

    async def _hold(self) -> None:
        try:
            async with self.client:
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as err:
            if not self._ready.done():
                self._ready.set_exception(err)

    async def ready(self) -> None:
        await asyncio.shield(self._ready)

    async def close(self) -> None:
        self._stop.set()
        if not self._ready.done():
            self._owner.cancel()
        with contextlib.suppress(BaseException):
            await self._owner


class Connections:
    """Open clients by connection name (one per event loop), opened on first use."""

    def __init__(self, servers: RemoteServers) -> None:
        self.servers = dict(servers)
        self._open: dict[tuple[asyncio.AbstractEventLoop, str], _OpenClient] = {}
        self._locks: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Lock] = {}
        self._http: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}

    def http(self) -> httpx.AsyncClient:
        """A shared ``httpx`` pool for listen streams (no read timeout: they idle)."""
        loop = asyncio.get_running_loop()
        if loop not in self._http:
            self._http[loop] = httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=None))
        return self._http[loop]

    @contextlib.asynccontextmanager
    async def client(self, name: str) -> AsyncIterator[Client[Any]]:
        """The open client of ``name``; an exception other than the remote's own
        answer (``keep_on``) drops it, so the next use reconnects."""
        key = (asyncio.get_running_loop(), name)
        async with self._locks.setdefault(key, asyncio.Lock()):
            opened = self._open.get(key)
            if opened is None:
                spec = self.servers[name]
                opened = _OpenClient(spec.client() if isinstance(spec, RemoteServer) else spec())
                try:
                    await opened.ready()
                except BaseException:
                    await opened.close()
                    raise
                self._open[key] = opened
        try:
            yield opened.client
        except Exception as err:
            if not _is_an_answer(err):
                await self._drop(key, opened)
            raise

    async def _drop(self, key: tuple[asyncio.AbstractEventLoop, str], opened: _OpenClient) -> None:
        if self._open.get(key) is opened:
            del self._open[key]
        await opened.close()

    async def close(self) -> None:
        """Close this event loop's clients (the worker stops)."""
        loop = asyncio.get_running_loop()
        for key in [key for key in self._open if key[0] is loop]:
            await self._drop(key, self._open[key])
        if (http := self._http.pop(loop, None)) is not None:
            await http.aclose()


def _is_an_answer(err: Exception) -> bool:
    """A JSON-RPC error or an application error is the remote's answer over a healthy
    connection; anything else (refused, reset) is not, nor is the MCP SDK's own
    ``CONNECTION_CLOSED`` error: a stdio process that died answers every request with
    it, so the client must go (a remote that answers -32000 itself costs a reconnect)."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED
    from temporalio.exceptions import ApplicationError

    if isinstance(err, MCPError):
        return err.code != CONNECTION_CLOSED
    return isinstance(err, ApplicationError)
