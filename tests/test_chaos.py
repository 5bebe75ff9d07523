"""Chaos: real processes killed and restarted mid-flight. Nothing may be lost.

Marked ``chaos``; CI runs them with the rest of the suite.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from fastmcp import Client, Context, FastMCP
from temporalio.client import Client as TemporalClient
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

from fastmcp_temporal import DevServer, McpTasksPlugin, TemporalTasks
from fastmcp_temporal.client import ToolTask, call_tool_task, update_task
from tests.helpers import declares_elicitation, eventually, front_end, kill, spawn, spawn_worker
from tests.ports import free_port
from tests.processes.crash_server import mcp as crash_server
from tests.processes.running import serving_on_free_port

pytestmark = pytest.mark.chaos


async def test_kill_9_the_worker_with_20_tasks_mid_leg(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    worker = spawn_worker(temporal_server.address, task_queue, "tests.processes.crash_server")
    try:
        async with Client(front_end(temporal_client, task_queue, crash_server)) as client:
            tasks = await asyncio.gather(
                *(
                    call_tool_task(client, "record_and_wait", {"marker_dir": str(tmp_path)})
                    for _ in range(20)
                )
            )
            await eventually(lambda: len(list(tmp_path.glob("run-*"))) == 20, timeout=60)
            kill(worker)
            (tmp_path / "release").write_text("")
            async with Worker(
                temporal_client,
                task_queue=task_queue,
                plugins=[McpTasksPlugin(crash_server)],
                max_heartbeat_throttle_interval=timedelta(seconds=1),
            ):
                finals = await asyncio.gather(*(task.wait(timeout=90) for task in tasks))
    finally:
        kill(worker)
    assert [final.status for final in finals] == ["completed"] * 20
    runs_per_task = Counter(marker.read_text() for marker in tmp_path.glob("run-*"))
    assert set(runs_per_task) == {task.task_id for task in tasks}, "no task lost"
    assert max(runs_per_task.values()) <= 2, "each leg body ran at most twice"


async def test_kill_and_restart_the_mcp_server_mid_flight(tmp_path: Path) -> None:
    """A new process on the same data dir (and its embedded Temporal) resumes every task."""
    url, args = _restartable_server(tmp_path)
    server = spawn(*args)
    try:
        await _wait_for_http(url)
        async with Client(url) as client:
            tasks = [
                await call_tool_task(client, "nap", {"seconds": 2, "tag": f"t{i}"})
                for i in range(10)
            ]
        kill(server)
        server = spawn(*args)
        await _wait_for_http(url)
        async with Client(url) as client:
            finals = [await _resume(client, task).wait(timeout=90) for task in tasks]
    finally:
        kill(server)
    assert [final.status for final in finals] == ["completed"] * 10
    assert [f.result["structuredContent"]["result"] for f in finals if f.result] == [
        f"t{i} rested" for i in range(10)
    ]


async def test_sigterm_hands_the_running_leg_back_at_once(tmp_path: Path) -> None:
    """SIGTERM unwinds ``mcp.run``'s lifespan, so the in-process worker shuts down.

    Its running leg is handed back to Temporal with the worker's shutdown (the
    next worker runs it at once) instead of being found dead when its heartbeat
    times out; the process exits 0 (``server.extension.drain``).
    """
    runs = tmp_path / "runs"
    runs.mkdir()
    url, args = _restartable_server(tmp_path)
    server = spawn(*args)
    try:
        await _wait_for_http(url)
        async with Client(url) as client:
            task = await call_tool_task(client, "record_and_wait", {"marker_dir": str(runs)})
        await eventually(lambda: len(list(runs.glob("run-*"))) == 1)
        server.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(server.wait, 60) == 0
        server = spawn(*args)
        await _wait_for_http(url)
        async with Client(url) as client:
            resumed = ToolTask(client, "record_and_wait", task.create_result)
            await eventually(lambda: len(list(runs.glob("run-*"))) == 2)
            retrying = (await resumed.status()).status_message or ""
            (runs / "release").write_text("")
            final = await resumed.wait(timeout=60)
    finally:
        kill(server)
    assert retrying.startswith("Retrying (attempt 2)"), retrying
    assert "Worker is shutting down" in retrying, retrying
    assert final.status == "completed"


async def test_restart_the_temporal_server_with_tasks_running_and_parked(
    tmp_path: Path, task_queue: str
) -> None:
    port = free_port()
    temporal = await DevServer.start(data_dir=tmp_path, ui=False, port=port)
    try:
        client = await TemporalClient.connect(
            temporal.address, data_converter=pydantic_data_converter
        )
        mcp = FastMCP("survivor")
        mcp.add_extension(TemporalTasks(client=client, task_queue=task_queue))

        @mcp.tool(task=True)
        async def nap(seconds: float) -> str:
            await asyncio.sleep(seconds)
            return "rested"

        @mcp.tool(task=True)
        async def wait_for_go(ctx: Context) -> str:
            if not ctx.input_responses:
                from tests.test_parking import question

                return question()  # type: ignore[return-value]
            return "went"

        async with Client(mcp, elicitation_handler=declares_elicitation) as mcp_client:
            running = [await call_tool_task(mcp_client, "nap", {"seconds": 3}) for _ in range(5)]
            parked = [await call_tool_task(mcp_client, "wait_for_go", {}) for _ in range(5)]
            views = [await t.wait(state="input_required", timeout=30) for t in parked]
            temporal.stop()
            temporal = await DevServer.start(data_dir=tmp_path, ui=False, port=port)
            for task, view in zip(parked, views, strict=True):
                (key,) = view.input_requests
                await update_task(mcp_client.session, task.task_id, {key: {"action": "accept"}})
            finals = [await t.wait(timeout=120) for t in running + parked]
    finally:
        temporal.stop()
    assert [final.status for final in finals] == ["completed"] * 10


@pytest.mark.exclusive  # 1000 tasks at once: tests beside it would miss their short windows
async def test_load_1000_tasks_from_50_concurrent_http_clients(
    temporal_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    async def one_client(url: str, first: int) -> list[int]:
        async with Client(url) as client:
            return [
                (await client.call_tool("echo", {"n": n})).data for n in range(first, first + 20)
            ]

    server = [sys.executable, "-m", "tests.processes.load_server", temporal_server.address]
    log = tmp_path / "load_server.log"
    async with serving_on_free_port("load server", [*server, task_queue], {}, log) as url:
        results = await asyncio.gather(*(one_client(url, 20 * c) for c in range(50)))
    assert sorted(n for batch in results for n in batch) == list(range(1000))


def _restartable_server(data_dir: Path) -> tuple[str, tuple[str, ...]]:
    """The URL and ``python -m`` arguments of ``tests.processes.http_server`` on a free port."""
    port = free_port()
    args = ("tests.processes.http_server", "--port", str(port), "--data-dir", str(data_dir))
    return f"http://127.0.0.1:{port}/mcp", args


def _resume(client: Client, task: ToolTask) -> ToolTask:
    """The same task id, driven by a new client connection."""
    return ToolTask(client, "nap", task.create_result)


async def _wait_for_http(url: str, timeout: float = 60) -> None:
    import httpx

    deadline = asyncio.get_running_loop().time() + timeout
    async with httpx.AsyncClient() as http:
        while True:
            try:
                await http.get(url)
                return
            except httpx.HTTPError:
                assert asyncio.get_running_loop().time() < deadline, f"{url} never came up"
                await asyncio.sleep(0.1)
