"""One embedded Temporal per data directory, shared by real processes.

Two MCP servers started from one folder run on one ``temporal`` process (one
SQLite file); each sees the other's tasks; ``kill -9`` of the one that started
it changes nothing for the other, and no task is lost (the killed server's task
finishes when it comes back); when the last user is gone, no Temporal is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastmcp import Client

from fastmcp_temporal.client import ToolTask, call_tool_task
from fastmcp_temporal.server.embedded import shared
from tests.helpers import eventually
from tests.ports import free_port
from tests.processes.running import Process

pytestmark = pytest.mark.chaos


def temporal_pids(data_dir: Path) -> list[int]:
    """``temporal server start-dev`` processes on this directory's SQLite file."""
    database = str(data_dir / "temporal.sqlite")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            temporal = Path(argv[0].decode()).name == "temporal"
            if temporal and b"start-dev" in argv and database.encode() in argv:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


class McpServer:
    """``tests.processes.embedded_server`` on a free port."""

    def __init__(self, name: str, data_dir: Path, logs: Path) -> None:
        self.name, self.data_dir, self.port = name, data_dir, free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = logs / f"{name}.log"
        self.process: Process | None = None

    async def start(self) -> McpServer:
        args = [sys.executable, "-m", "tests.processes.embedded_server", "--name", self.name]
        args += ["--port", str(self.port), "--data-dir", str(self.data_dir)]
        self.process = Process(self.name, args, {shared.LINGER_ENV: "0"}, self.log)
        await self.process.wait_for_port(self.port)
        return self

    def kill9(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.popen.wait()


@contextlib.asynccontextmanager
async def servers(tmp_path: Path, *names: str) -> AsyncIterator[list[McpServer]]:
    data_dir = tmp_path / "data"
    started = [McpServer(name, data_dir, tmp_path) for name in names]
    try:
        for server in started:
            await server.start()
        yield started
    finally:
        for server in started:
            if server.process is not None:
                server.process.stop()


async def test_two_servers_in_one_folder_share_one_temporal_and_see_each_others_tasks(
    tmp_path: Path,
) -> None:
    async with servers(tmp_path, "alpha", "beta") as (alpha, beta):
        assert len(temporal_pids(alpha.data_dir)) == 1
        record = json.loads((alpha.data_dir / shared.RECORD).read_text())
        assert temporal_pids(alpha.data_dir) == [record["temporal_pid"]]
        async with Client(alpha.url) as on_alpha, Client(beta.url) as on_beta:
            first = await call_tool_task(on_alpha, "nap", {"seconds": 0.1, "tag": "one"})
            second = await call_tool_task(on_beta, "nap", {"seconds": 0.1, "tag": "two"})
            seen_by_beta = await ToolTask(on_beta, "nap", first.create_result).wait(timeout=60)
            seen_by_alpha = await ToolTask(on_alpha, "nap", second.create_result).wait(timeout=60)
    assert seen_by_beta.result is not None and seen_by_alpha.result is not None
    assert seen_by_beta.result["structuredContent"] == {"result": "one rested on alpha"}
    assert seen_by_alpha.result["structuredContent"] == {"result": "two rested on beta"}
    # The keeper stops Temporal, then removes its record, then exits.
    await eventually(lambda: not shared.keeper_alive(alpha.data_dir))
    assert not temporal_pids(alpha.data_dir), "the last user gone: Temporal stopped"
    assert not (alpha.data_dir / shared.RECORD).exists(), "the last user gone: record removed"


async def test_kill_9_of_the_starter_keeps_the_other_working_and_loses_no_task(
    tmp_path: Path,
) -> None:
    async with servers(tmp_path, "starter", "other") as (starter, other):
        (temporal_pid,) = temporal_pids(starter.data_dir)
        async with Client(other.url) as on_other:
            running = await call_tool_task(on_other, "nap", {"seconds": 2, "tag": "yours"})
            # The kill follows the orphan's creation at once: its 3 s nap must still be
            # running then, which a loaded machine's slower calls in between could end.
            async with Client(starter.url) as on_starter:
                orphaned = await call_tool_task(on_starter, "nap", {"seconds": 3, "tag": "mine"})
            starter.kill9()
            assert temporal_pids(starter.data_dir) == [temporal_pid], "Temporal kept running"
            done = await running.wait(timeout=60)
            new = await call_tool_task(on_other, "nap", {"seconds": 0, "tag": "new"})
            fresh = await new.wait(timeout=60)
            waiting = await ToolTask(on_other, "nap", orphaned.create_result).status()
        await starter.start()  # the killed server comes back and finishes its own task
        async with Client(starter.url) as on_starter:
            finished = await ToolTask(on_starter, "nap", orphaned.create_result).wait(timeout=90)
        assert temporal_pids(starter.data_dir) == [temporal_pid], "joined, did not start another"
        other.process.stop()  # type: ignore[union-attr]
        await asyncio.sleep(1)
        assert alive(temporal_pid), "still used by the restarted starter"
    await eventually(lambda: not temporal_pids(starter.data_dir))
    assert done.status == "completed" and fresh.status == "completed"
    assert waiting.status == "working", "the killed server's task waits for its worker"
    assert finished.status == "completed" and finished.result is not None
    assert finished.result["structuredContent"] == {"result": "mine rested on starter"}


async def test_kill_9_of_the_keeper_restarts_temporal_at_the_same_address(tmp_path: Path) -> None:
    """Temporal dies with its keeper; a user restarts both, and the SQLite file keeps every task."""
    async with servers(tmp_path, "first", "second") as (first, second):
        before = shared.EmbeddedServer.read(first.data_dir)
        assert before is not None
        async with Client(first.url) as on_first:
            first_task = await call_tool_task(on_first, "nap", {"seconds": 0, "tag": "a"})
            earlier = await first_task.wait(timeout=60)
            created = await call_tool_task(on_first, "nap", {"seconds": 0, "tag": "b"})
            await created.wait(timeout=60)
        os.kill(before.keeper_pid, signal.SIGKILL)

        def restarted() -> bool:
            now = shared.EmbeddedServer.read(first.data_dir)
            return now is not None and now.keeper_pid != before.keeper_pid

        await eventually(restarted, timeout=60)
        after = shared.EmbeddedServer.read(first.data_dir)
        assert after is not None and after.address == before.address
        assert temporal_pids(first.data_dir) == [after.temporal_pid]
        async with Client(second.url) as on_second:
            fresh = await call_tool_task(on_second, "nap", {"seconds": 0, "tag": "c"})
            done = await fresh.wait(timeout=60)
            kept = await ToolTask(on_second, "nap", created.create_result).status()
    assert earlier.status == "completed" and done.status == "completed"
    assert kept.status == "completed", "the task from before the restart is still there"
    await eventually(lambda: not temporal_pids(first.data_dir))
