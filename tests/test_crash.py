"""A dead worker loses nothing: its leg times out on heartbeats and runs elsewhere."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from fastmcp import Client, FastMCP
from fastmcp_tasks import call_tool_task
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import DevServer, LegPolicy, McpTasksPlugin, TemporalTasks
from tests.processes.crash_server import mcp as crash_server

ROOT = Path(__file__).resolve().parent.parent


async def wait_for(predicate, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition never became true"
        await asyncio.sleep(0.05)


async def test_killed_worker_mid_leg_is_replaced_and_the_task_completes(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    front_end = FastMCP("front-end")
    front_end.add_extension(
        TemporalTasks(
            client=temporal_client,
            task_queue=task_queue,
            run_worker=False,
            leg_policy=LegPolicy(heartbeat_timeout_s=2),
        )
    )
    front_end.mount(crash_server)  # the same tools, served by the workers
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.processes.worker", temporal_server.address, task_queue],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        async with Client(front_end) as client:
            task = await call_tool_task(client, "record_and_wait", {"marker_dir": str(tmp_path)})
            await wait_for(lambda: len(list(tmp_path.glob("run-*"))) == 1)
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            (tmp_path / "release").write_text("")
            async with Worker(
                temporal_client,
                task_queue=task_queue,
                plugins=[McpTasksPlugin(crash_server)],
                max_heartbeat_throttle_interval=timedelta(seconds=1),
            ):
                final = await task.wait(timeout=60)
                status_seen = final.status
            runs = sorted(p.name for p in tmp_path.glob("run-*"))
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert status_seen == "completed"
    assert final.result is not None
    assert final.result["structuredContent"]["result"] == f"finished in {os.getpid()}"
    assert len(runs) == 2, f"the leg ran once per worker, no more: {runs}"
    assert {run.split("-")[1] for run in runs} == {str(process.pid), str(os.getpid())}
