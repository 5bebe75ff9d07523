"""Stateless front ends and separate workers, as real processes over HTTP.

Three MCP front ends (``fastmcp run``, ``FASTMCP_TEMPORAL_RUN_WORKER=false``) and
two ``fastmcp-temporal worker`` processes share one Temporal and one task queue.
A task created on A is read on B, answered on C and cancelled on A; its legs
run only in the workers; a worker that gets SIGTERM mid-leg hands the leg back
(another worker runs it) and exits 0.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

from fastmcp_temporal import DevServer
from fastmcp_temporal.server.cli.worker import READY_LINE
from tests.ports import free_port
from tests.processes.running import BIN, Process
from tests.wire import RawMcp

SERVER = "tests/processes/replica_server.py"


def http_on(port: int) -> list[str]:
    return ["--host", "127.0.0.1", "--port", str(port), "--no-banner"]


async def poll(front_end: RawMcp, task_id: str, status: str, timeout: float = 60) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        task = await front_end.result("tasks/get", {"taskId": task_id})
        if task["status"] == status:
            return task
        assert asyncio.get_running_loop().time() < deadline, f"never {status}: {task}"
        await asyncio.sleep(0.1)


async def wait_for_files(directory: Path, pattern: str, count: int, timeout: float = 60) -> list:
    deadline = asyncio.get_running_loop().time() + timeout
    while len(found := sorted(directory.glob(pattern))) < count:
        assert asyncio.get_running_loop().time() < deadline, f"{count} x {pattern}: {found}"
        await asyncio.sleep(0.05)
    return found


async def test_front_ends_are_stateless_and_workers_share_the_queue(
    temporal_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    env = {"TEMPORAL_ADDRESS": temporal_server.address, "REPLICA_TASK_QUEUE": task_queue}
    ports = [free_port() for _ in range(3)]
    processes: list[Process] = []
    try:
        front_ends = [
            Process(
                f"front-end-{name}",
                [str(BIN / "fastmcp"), "run", SERVER, "--transport", "http", *http_on(port)],
                {**env, "FASTMCP_TEMPORAL_RUN_WORKER": "false"},
                tmp_path / f"front-end-{name}.log",
            )
            for name, port in zip("ABC", ports, strict=True)
        ]
        workers = [
            Process(
                f"worker-{n}",
                [str(BIN / "fastmcp-temporal"), "worker", SERVER, "--graceful-timeout", "1"],
                env,
                tmp_path / f"worker-{n}.log",
            )
            for n in (1, 2)
        ]
        processes = [*front_ends, *workers]
        for front_end, port in zip(front_ends, ports, strict=True):
            await front_end.wait_for_port(port)
        for worker in workers:
            await worker.wait_for_output(READY_LINE)
        a, b, c = (RawMcp(f"http://127.0.0.1:{port}/mcp") for port in ports)

        created = await a.result(
            "tools/call",
            {
                "name": "approve_then_work",
                "arguments": {"item": "widget", "marker_dir": str(tmp_path)},
            },
        )
        assert created["resultType"] == "task"
        task_id = created["taskId"]

        waiting = await poll(b, task_id, "input_required")
        ((key, request),) = waiting["inputRequests"].items()
        assert request["params"]["message"] == "Approve widget?"

        await c.result(
            "tasks/update",
            {
                "taskId": task_id,
                "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
            },
        )
        (first_leg,) = await wait_for_files(tmp_path, "leg-*", 1)
        assert (await b.result("tasks/get", {"taskId": task_id}))["status"] == "working"

        # SIGTERM the worker running the leg: it drains for 1 s, hands the leg
        # back, and exits 0; the other worker runs it again.
        first_pid = int(first_leg.name.split("-")[1])
        (draining,) = [w for w in workers if w.pid == first_pid]
        draining.signal(signal.SIGTERM)
        assert await draining.exit_code(timeout=30) == 0, draining.output()[-2000:]
        legs = await wait_for_files(tmp_path, "leg-*", 2)
        pids = {int(leg.name.split("-")[1]) for leg in legs}
        assert pids == {w.pid for w in workers}, "the leg moved to the other worker"

        await a.result("tasks/cancel", {"taskId": task_id})
        final = await poll(b, task_id, "cancelled")
        assert final["taskId"] == task_id
        assert not {fe.pid for fe in front_ends} & pids, "front ends never run legs"
        # Each front end stayed up and stateless: C reads the same end.
        assert (await c.result("tasks/get", {"taskId": task_id}))["status"] == "cancelled"
    finally:
        for process in processes:
            process.stop()
