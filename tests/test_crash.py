"""A dead worker loses nothing: its leg times out on heartbeats and runs elsewhere."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from fastmcp import Client
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import DevServer, McpTasksPlugin
from fastmcp_temporal.client import call_tool_task
from tests.helpers import eventually, front_end, kill, spawn_worker
from tests.processes.crash_server import mcp as crash_server


async def test_killed_worker_mid_leg_is_replaced_and_the_task_completes(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    process = spawn_worker(temporal_server.address, task_queue, "tests.processes.crash_server")
    try:
        async with Client(front_end(temporal_client, task_queue, crash_server)) as client:
            task = await call_tool_task(client, "record_and_wait", {"marker_dir": str(tmp_path)})
            await eventually(lambda: len(list(tmp_path.glob("run-*"))) == 1)
            kill(process)
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
        kill(process)
    assert status_seen == "completed"
    assert final.result is not None
    assert final.result["structuredContent"]["result"] == f"finished in {os.getpid()}"
    assert len(runs) == 2, f"the leg ran once per worker, no more: {runs}"
    assert {run.split("-")[1] for run in runs} == {str(process.pid), str(os.getpid())}
