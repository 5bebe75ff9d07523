"""Test suites of task tools: one Temporal for the whole session, one task queue per test.

```python
# conftest.py
pytest_plugins = ["fastmcp_temporal.testing"]

# test_tools.py
async def test_crunch(temporal_tasks):
    mcp = FastMCP("s")
    mcp.add_extension(temporal_tasks())           # the session's Temporal, this test's queue
    ...
```

Starting a Temporal dev server takes seconds; connecting to a running one and
starting a worker takes milliseconds. So the session joins one *shared*
embedded server (``fastmcp_temporal.server.embedded.shared``) and every test gets a
fresh task queue: tests never see each other's tasks and nothing restarts
between them. Under ``pytest-xdist`` all workers of a run join the same server
(its data directory is under the run's base temp directory), and it stops
shortly after the last worker ends, even if pytest is killed.

Fixtures (async ones need ``pytest-asyncio`` with a session-scoped loop,
``asyncio_default_fixture_loop_scope = "session"``):

- ``temporal_server`` (session): the ``EmbeddedServer`` -- ``.address``, ``.ui_url``;
- ``temporal_client`` (session): a client with the pydantic data converter;
- ``task_queue``: a queue name unique to the test;
- ``temporal_tasks``: builds ``TemporalTasks(client=..., task_queue=..., **options)``,
  with ``query_timeout`` ``TEST_QUERY_TIMEOUT`` (10 s) unless given: a test checks
  what the tool does, and the 2 s production bound turned a slow CI machine into
  "Temporal did not answer in time" (a retryable ``-32001`` that not every client
  asks again on). A test of that bound passes its own ``query_timeout``. Callers'
  credentials are sealed as the embedded default seals them: ``credentials_key_dir``
  is the session's data directory (``temporal_server.data_dir``), whose
  ``credentials-key`` a worker process started with ``fastmcp-temporal worker
  ... --data-dir <temporal_server.data_dir>`` finds too; a child that connects by
  address needs ``FASTMCP_TEMPORAL_CREDENTIALS_KEY_DIR=<temporal_server.data_dir>``
  in its environment, and a hand-built worker ``McpTasksPlugin(mcp,
  credentials_key_dir=temporal_server.data_dir)``.

Outside pytest, ``shared_temporal(data_dir)`` is the same thing as an async
context manager.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from fastmcp_temporal.server.core.settings import env_var, load_settings
from fastmcp_temporal.server.embedded import shared
from fastmcp_temporal.server.embedded.shared import EmbeddedServer
from fastmcp_temporal.server.extension import TemporalTasks

__all__ = ["EmbeddedServer", "shared_temporal"]

#: Put the session's Temporal in this directory instead of pytest's temp directory.
DATA_DIR_ENV = env_var("test_data_dir")
#: ``temporal_tasks``'s bound on each Temporal call of a ``tasks/*`` request.
TEST_QUERY_TIMEOUT = timedelta(seconds=10)


@asynccontextmanager
async def shared_temporal(
    data_dir: str | Path, *, ui: bool = True
) -> AsyncIterator[EmbeddedServer]:
    """Use (starting if needed) the embedded Temporal of ``data_dir`` while inside."""
    lease = await shared.join(data_dir, ui=ui)
    try:
        yield lease.server
    finally:
        lease.release()


def session_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory per test run, the same for every ``pytest-xdist`` worker of it."""
    configured = load_settings().test_data_dir
    if configured is not None:
        return configured
    base = tmp_path_factory.getbasetemp()
    run_dir = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return run_dir / "fastmcp-temporal"


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def temporal_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[EmbeddedServer]:
    """The session's Temporal: a shared embedded dev server (SQLite file, Web UI)."""
    async with shared_temporal(session_data_dir(tmp_path_factory)) as server:
        yield server


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def temporal_client(temporal_server: EmbeddedServer) -> Client:
    return await Client.connect(
        temporal_server.address,
        namespace=temporal_server.namespace,
        data_converter=pydantic_data_converter,
    )


@pytest.fixture
def task_queue(request: pytest.FixtureRequest) -> str:
    """This test's own queue: its workflows and legs are invisible to other tests' workers."""
    return f"test-{request.node.name[:40]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def temporal_tasks(
    temporal_server: EmbeddedServer, temporal_client: Client, task_queue: str, tmp_path: Path
) -> Callable[..., TemporalTasks]:
    """Build a ``TemporalTasks`` bound to the session's server and this test's queue
    (its big payloads in this test's own directory; each Temporal call of a
    ``tasks/*`` request bounded by ``TEST_QUERY_TIMEOUT``; callers' credentials
    sealed under the session data directory's ``credentials-key``, as the embedded
    default does, so an authenticated server starts as it would in production)."""

    def build(**options: object) -> TemporalTasks:
        options.setdefault("client", temporal_client)
        options.setdefault("task_queue", task_queue)
        options.setdefault("data_dir", tmp_path)
        options.setdefault("query_timeout", TEST_QUERY_TIMEOUT)
        options.setdefault("credentials_key_dir", temporal_server.data_dir)
        return TemporalTasks(**options)  # type: ignore[arg-type]

    return build
