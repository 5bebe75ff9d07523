"""Shared fixtures: one real Temporal dev server for the whole session.

Every test gets its own task queue, so tests never see each other's workflows
and nothing is restarted between them. Servers are real FastMCP servers with
``TemporalTasks`` sharing the session's client; clients are real FastMCP
``Client``s over the in-memory transport or streamable HTTP, declaring the
tasks extension: through the peer's client half (``fastmcp_tasks``) where it
is installed (FastMCP 4.1, as its users have it), else through
``fastmcp_temporal.client`` (FastMCP 4.2, where the peer does not exist).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from fastmcp import Client, FastMCP
from fastmcp.utilities.tests import run_server_async
from temporalio.client import Client as TemporalClient
from temporalio.contrib.pydantic import pydantic_data_converter

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.client import enable_transparent_tasks

with contextlib.suppress(ImportError):
    import fastmcp_tasks  # noqa: F401  (the peer's client half, FastMCP 4.1 only)
enable_transparent_tasks()  # inert while the peer's client half is imported


@pytest.fixture(scope="session")
async def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DevServer]:
    """A real ``temporal server start-dev`` (SQLite file, like the embedded default)."""
    data_dir = tmp_path_factory.mktemp("temporal")
    server = await DevServer.start(data_dir=data_dir, ui=True)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
async def temporal_client(temporal_server: DevServer) -> TemporalClient:
    return await TemporalClient.connect(
        temporal_server.address, data_converter=pydantic_data_converter
    )


@pytest.fixture
def task_queue(request: pytest.FixtureRequest) -> str:
    return f"test-{request.node.name[:40]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def temporal_tasks(
    temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> Callable[..., TemporalTasks]:
    """Build a ``TemporalTasks`` bound to the session's server and this test's queue
    (big payloads go to this test's own directory)."""

    def build(**options: object) -> TemporalTasks:
        options.setdefault("client", temporal_client)
        options.setdefault("task_queue", task_queue)
        options.setdefault("data_dir", tmp_path)
        return TemporalTasks(**options)  # type: ignore[arg-type]

    return build


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
