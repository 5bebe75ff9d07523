"""The embedded default and the "grown up" address mode.

``TemporalTasks()`` with no address starts a real ``temporal server start-dev``
(SQLite file, Web UI), runs the worker in process and stops the server on
shutdown; with an address it starts nothing. Also: the ref-counted wire step
that keeps a ``CreateTaskResult`` intact.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from pathlib import Path

import httpx
import pytest
from fastmcp import Client, FastMCP
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.server.embedded import devserver, shared
from fastmcp_temporal.server.extension import startup_line
from fastmcp_temporal.testing import shared_temporal
from tests.helpers import eventually


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        # The process may be reaped between the two checks: then it is not running.
        return open(f"/proc/{pid}/stat").read().split()[2] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


def echo_server(extension: TemporalTasks) -> FastMCP:
    mcp = FastMCP("embedded")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def echo(text: str) -> str:
        return text

    return mcp


async def test_no_address_starts_and_stops_an_embedded_dev_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEMPORAL_ADDRESS", raising=False)
    monkeypatch.setenv(shared.LINGER_ENV, "0")
    extension = TemporalTasks(data_dir=tmp_path, task_queue="embedded")
    async with Client(echo_server(extension)) as client:
        dev = extension.dev_server
        assert dev is not None and _running(dev.temporal_pid)
        assert (await client.call_tool("echo", {"text": "durable"})).data == "durable"
        assert (tmp_path / "temporal.sqlite").exists()
        assert dev.ui_url is not None
        async with httpx.AsyncClient() as http:
            settings = await http.get(f"{dev.ui_url}/api/v1/settings")
        assert settings.status_code == 200
    assert extension.dev_server is None
    await eventually(lambda: not _running(dev.temporal_pid) and not _running(dev.keeper_pid))
    assert shared.running(tmp_path) is None, "the last user gone: nothing left running"


class Records(logging.Handler):
    """Every record one logger emits, once (caplog's root handler sees only propagated ones)."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


async def test_a_second_lifespan_joins_the_running_server(tmp_path: Path) -> None:
    """In one process, nested and in a row: one server, one start-up line."""
    first = TemporalTasks(data_dir=tmp_path, ui=False)
    second = TemporalTasks(data_dir=tmp_path, ui=False)
    again = echo_server(second)
    records = Records()
    startup_line.logger.addHandler(records)
    try:
        async with Client(echo_server(first)):
            queue, shared = first.task_queue, first.dev_server
            async with Client(again) as client:
                assert second.dev_server == shared
                assert (await client.call_tool("echo", {"text": "joined"})).data == "joined"
        async with Client(again):
            assert second.dev_server == shared, "within the linger: reused"
    finally:
        startup_line.logger.removeHandler(records)
    hints = [message for message in records.messages if "embedded Temporal at" in message]
    assert len(hints) == 1, hints
    assert "temporal workflow list" in hints[0] and "TEMPORAL_ADDRESS=127.0.0.1:" in hints[0]
    assert queue == "mcp-tasks-embedded", "on the embedded server: per server name"


async def test_tasks_survive_a_restart_of_the_embedded_server(tmp_path: Path) -> None:
    """Same data directory, new process: the finished task is still there."""
    first = TemporalTasks(data_dir=tmp_path, task_queue="restart", ui=False)
    async with Client(echo_server(first)) as client:
        from fastmcp_temporal.client import call_tool_task

        task = await call_tool_task(client, "echo", {"text": "kept"})
        await task.wait()
    second = TemporalTasks(data_dir=tmp_path, task_queue="restart", ui=False)
    async with Client(echo_server(second)) as client:
        from fastmcp_temporal.client import get_task

        again = await get_task(client.session, task.task_id)
        assert again.status == "completed"
        assert again.result is not None and again.result["structuredContent"] == {"result": "kept"}


async def test_an_address_connects_and_starts_nothing(
    temporal_server: DevServer, task_queue: str
) -> None:
    extension = TemporalTasks(address=temporal_server.address, task_queue=task_queue)
    async with Client(echo_server(extension)) as client:
        assert extension.dev_server is None
        assert (await client.call_tool("echo", {"text": "remote"})).data == "remote"


async def test_a_joiner_asking_for_another_namespace_is_told_which_one_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with shared_temporal(tmp_path, ui=False) as server:
        monkeypatch.setenv("TEMPORAL_NAMESPACE", "elsewhere")
        with pytest.raises(Exception, match="serves 'default', not 'elsewhere'"):
            async with Client(echo_server(TemporalTasks(data_dir=tmp_path))):
                pass
        assert shared.running(tmp_path) == server, "the failed joiner changed nothing"


async def test_concurrent_joins_start_one_server(tmp_path: Path) -> None:
    """Joiners racing on a fresh data directory: the join lock lets one start it."""
    leases = await asyncio.gather(*(shared.join(tmp_path, ui=False) for _ in range(3)))
    try:
        assert len({lease.server for lease in leases}) == 1
        assert shared.keeper_alive(tmp_path)
    finally:
        for lease in leases:
            lease.release()


async def test_a_dev_server_whose_chosen_port_was_taken_starts_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port chosen by binding 0 is free only until someone binds it: another
    process can take it before Temporal does (seen in CI: "bind: address already in
    use"). The start chooses again instead of failing."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        taken_port = taken.getsockname()[1]
        choices = iter([taken_port])
        real_free_port = devserver.free_port
        monkeypatch.setattr(devserver, "free_port", lambda: next(choices, None) or real_free_port())
        server = await DevServer.start(data_dir=tmp_path, ui=False)
        try:
            assert server.address != f"127.0.0.1:{taken_port}"
            client = await TemporalClient.connect(server.address)
            assert await client.count_workflows() is not None
            log = server.log_path.read_text()
            assert f"{taken_port}" in log and "address already in use" in log  # it did race
        finally:
            server.stop()


async def test_a_port_the_caller_gave_that_is_taken_fails_clearly(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(RuntimeError, match="Temporal dev server exited"):
            await DevServer.start(data_dir=tmp_path, ui=False, port=taken.getsockname()[1])
