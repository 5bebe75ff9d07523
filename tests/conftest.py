"""Shared fixtures: one real Temporal for the whole session (``fastmcp_temporal.testing``).

``temporal_server``, ``temporal_client``, ``task_queue`` and ``temporal_tasks``
come from the shipped plugin: the session joins one shared embedded dev server
(SQLite file, Web UI, like the embedded default) and every test gets its own
task queue, so tests never see each other's workflows and nothing is restarted
between them. Servers are real FastMCP servers with ``TemporalTasks`` sharing
the session's client; clients are real FastMCP ``Client``s (with the
``fastmcp_tasks`` client half) over the in-memory transport or streamable HTTP.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import fastmcp_tasks  # noqa: F401  (registers the client half of the tasks extension)
import pytest
from fastmcp import Client, FastMCP
from fastmcp.utilities.tests import run_server_async

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
