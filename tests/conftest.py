"""Shared fixtures: one real Temporal for the whole session (``fastmcp_temporal.testing``).

``temporal_server``, ``temporal_client``, ``task_queue`` and ``temporal_tasks``
come from the shipped plugin: the session joins one shared embedded dev server
(SQLite file, Web UI, like the embedded default) and every test gets its own
task queue, so tests never see each other's workflows and nothing is restarted
between them. Servers are real FastMCP servers with ``TemporalTasks`` sharing
the session's client; clients are real FastMCP ``Client``s over the in-memory
transport or streamable HTTP, declaring the tasks extension: through the peer's
client half (``fastmcp_tasks``) where it is installed (FastMCP 4.1, as its users
have it), else through ``fastmcp_temporal.client`` (FastMCP 4.2, where the peer
does not exist).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import pytest_asyncio
from fastmcp import Client, FastMCP

from fastmcp_temporal import DevServer
from fastmcp_temporal.client import enable_transparent_tasks
from fastmcp_temporal.server.core.settings import env_var
from fastmcp_temporal.server.embedded.shared import data_directory
from tests import exclusive, lines, slow_first
from tests.helpers import needs_peer
from tests.ports import run_server_async
from tests.remote_harness import RemotePeer

with contextlib.suppress(ImportError):
    import fastmcp_tasks  # noqa: F401  (the peer's client half, FastMCP 4.1 only)
enable_transparent_tasks()  # inert while the peer's client half is imported


def pytest_configure(config: pytest.Config) -> None:
    """Every server the suite starts -- in this process or a child (a remote, a front
    end, a worker) -- bounds its Temporal calls as the plugin's ``temporal_tasks`` does:
    a test checks what a server does, not whether a loaded machine answers within the
    2 s production bound (tests of that bound pass their own ``query_timeout``)."""
    from fastmcp_temporal.testing import TEST_QUERY_TIMEOUT  # once pytest has loaded it

    os.environ.setdefault(env_var("query_timeout"), str(TEST_QUERY_TIMEOUT.total_seconds()))


@pytest.fixture(scope="session", autouse=True)
def _sealed_like_the_embedded_default(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every server the suite starts by the session Temporal's address -- here without
    ``temporal_tasks``, or in a child (a remote, a front end, a worker) -- seals callers'
    credentials under the session data directory's ``credentials-key``, as the plugin's
    ``temporal_tasks`` does: the suite runs the default path (sealed), and an authenticated
    server on that address starts instead of refusing for want of a key. Tests of the
    refusal and of the address-without-key default unset it (``tests/test_credentials.py``);
    a test that needs credentials in clear sets ``FASTMCP_TEMPORAL_CREDENTIALS_IN_CLEAR``."""
    from fastmcp_temporal.testing import session_data_dir

    os.environ.setdefault(
        env_var("credentials_key_dir"), str(data_directory(session_data_dir(tmp_path_factory)))
    )


pytest_plugins = ["fastmcp_temporal.testing"]


@asynccontextmanager
async def http_client(server: FastMCP, **client_options: object) -> AsyncIterator[Client]:
    """A FastMCP ``Client`` talking streamable HTTP to ``server`` on 127.0.0.1."""
    async with run_server_async(server) as url, Client(url, **client_options) as client:  # type: ignore[arg-type]
        yield client


@pytest.fixture(autouse=True)
def _no_ambient_temporal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests choose their Temporal explicitly; an exported address must not leak in."""
    if os.environ.get("TEMPORAL_ADDRESS"):
        monkeypatch.delenv("TEMPORAL_ADDRESS")


@pytest.fixture(autouse=True)
def _turn(request: pytest.FixtureRequest) -> Iterator[None]:
    """Tests run in parallel; an ``exclusive`` one runs alone (``tests.exclusive``)."""
    alone = request.node.get_closest_marker(exclusive.MARKER) is not None
    with exclusive.turn(exclusive.lock_dir(), exclusive=alone):
        yield


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    lines.mark_every_line(items)
    slow_first.longest_first(items)
    exclusive.exclusive_first(items)  # stable: the longest after the exclusive ones


@pytest_asyncio.fixture(params=[pytest.param("ours"), pytest.param("peer", marks=needs_peer)])
async def peer(
    request: pytest.FixtureRequest, temporal_server: DevServer, task_queue: str, tmp_path: Path
) -> AsyncIterator[RemotePeer]:
    """The remote MCP server of a remote-call test, in its own process: ours, then the peer."""
    remote = RemotePeer(request.param, tmp_path, temporal_server.address, task_queue)
    await remote.start()
    try:
        yield remote
    finally:
        remote.stop()
