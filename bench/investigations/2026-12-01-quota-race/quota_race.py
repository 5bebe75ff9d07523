"""20 creators race a per-caller limit of 5 over two front ends sharing one Temporal.

    .venv/bin/python bench/investigations/2026-12-01-quota-race/quota_race.py \\
        --rounds 10 > bench/investigations/2026-12-01-quota-race/results.md

Embedded default (dev server on a fresh SQLite file). Two ``TemporalTasks``
front ends on one task queue -- one with the worker, one without -- each
serving FastMCP ``Client``s on the in-memory transport, all one (anonymous)
caller with ``max_open_tasks_per_caller=5``. Each round, 20 ``tools/call`` at
once (10 per front end) of a tool that holds until released; then what
Temporal holds is counted -- ``describe`` of every task the calls named, and
a visibility count of all open tasks on the queue once it has caught up --
the tasks are released and waited for, and the next round races again over
slots still held by the ended tasks (the reclaim path). Before each round the
same 20 calls run with the quota off (all admitted, released, waited for): the
baseline create latency of the same burst on the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import fastmcp_tasks  # noqa: F401  (the client half: declares the tasks extension)
from fastmcp import Client, FastMCP
from mcp.shared.exceptions import MCPError
from temporalio.client import WorkflowExecutionStatus

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import ToolTask, call_tool_task
from fastmcp_temporal.server.tasks.engine import TaskEngine, workflow_id_for

FOLDER = f"bench/investigations/{Path(__file__).resolve().parent.name}"

LIMIT = 5
CREATORS = 20
QUEUE = "bench-quota-race"


def front_end(
    data_dir: str, release: asyncio.Event, *, worker: bool
) -> tuple[FastMCP, TemporalTasks]:
    mcp = FastMCP("quota-race")
    extension = TemporalTasks(
        data_dir=data_dir,
        ui=False,
        task_queue=QUEUE,
        run_worker=worker,
        max_open_tasks_per_caller=LIMIT,
    )
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def hold() -> str:
        await asyncio.wait_for(release.wait(), 120)
        return "released"

    return mcp, extension


async def attempt(client: Client) -> tuple[ToolTask | None, float, dict[str, Any] | None]:
    started = time.perf_counter()
    try:
        task = await call_tool_task(client, "hold", {})
        return task, (time.perf_counter() - started) * 1000, None
    except MCPError as err:
        data = err.data if isinstance(err.data, dict) else {}
        return None, (time.perf_counter() - started) * 1000, {"code": err.code, **data}


async def run(rounds: int) -> None:
    data_dir = tempfile.mkdtemp(prefix="bench-quota-race-")
    release = asyncio.Event()
    with_worker, extension = front_end(data_dir, release, worker=True)
    async with Client(with_worker) as first:
        without, replica = front_end(data_dir, release, worker=False)
        async with Client(without) as second:
            engine = extension.engine
            quotas = [engine.quota, replica.engine.quota]
            print("```bash")
            command = f".venv/bin/python {FOLDER}/quota_race.py --rounds {rounds}"
            print(f"{command} > bench/investigations/2026-12-01-quota-race/results.md")
            print("```")
            print()
            print(f"1-minute load average at the start: {os.getloadavg()[0]:.1f} (2 shared cores).")
            print()
            print(f"{CREATORS} concurrent creators, limit {LIMIT}, two front ends, {rounds} rounds")
            print()
            print(
                "| round | admitted | refused (-32001, retryable, retryAfterMs) | "
                "open per describe | open per visibility | admit p50 ms | refuse p50 ms | "
                "no quota: create p50 ms |"
            )
            print("|---|---|---|---|---|---|---|---|")
            worst = 0
            for round_ in range(1, rounds + 1):
                clients = [first, second] * (CREATORS // 2)
                for quota in quotas:
                    quota.limit = None  # the baseline: the same race with no quota
                release.clear()
                baseline = await asyncio.gather(*(attempt(client) for client in clients))
                release.set()
                await asyncio.gather(*(task.result() for task, _, _ in baseline if task))
                base_ms = statistics.median(ms for _, ms, _ in baseline)
                for quota in quotas:
                    quota.limit = LIMIT
                release.clear()
                outcomes = await asyncio.gather(*(attempt(client) for client in clients))
                tasks = [task for task, _, _ in outcomes if task is not None]
                refusals = [error for task, _, error in outcomes if task is None]
                clean = all(
                    error is not None
                    and error["code"] == -32001
                    and error.get("retryable") is True
                    and error.get("retryAfterMs", 0) > 0
                    for error in refusals
                )
                described = 0
                for task in tasks:
                    handle = engine.client.get_workflow_handle(
                        workflow_id_for(task.task_id, None, engine.scope_secret)
                    )
                    if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
                        described += 1
                visible = await _open_on_queue(engine, expected=len(tasks))
                worst = max(worst, described, visible)
                admit_ms = [ms for task, ms, _ in outcomes if task is not None]
                refuse_ms = [ms for task, ms, _ in outcomes if task is None]
                shape = "all" if clean else "NOT all"
                print(
                    f"| {round_} | {len(tasks)} | {len(refusals)} ({shape}) "
                    f"| {described} | {visible} | {statistics.median(admit_ms):.0f} | "
                    f"{statistics.median(refuse_ms) if refuse_ms else 0:.0f} | {base_ms:.0f} |"
                )
                release.set()
                await asyncio.gather(*(task.result() for task in tasks))
            print()
            print(f"Most open tasks seen at once: {worst} (limit {LIMIT}).")
            print(f"1-minute load average at the end: {os.getloadavg()[0]:.1f}.")


async def _open_on_queue(engine: TaskEngine, *, expected: int) -> int:
    """Open tasks on the queue per visibility, once it shows at least ``expected`` (or 5 s)."""
    query = f"TaskQueue = '{QUEUE}' AND ExecutionStatus = 'Running'"
    deadline = time.monotonic() + 5
    while True:
        count = (await engine.client.count_workflows(query)).count
        if count >= expected or time.monotonic() > deadline:
            await asyncio.sleep(0.5)  # room for a task beyond the limit to show
            return (await engine.client.count_workflows(query)).count
        await asyncio.sleep(0.1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    asyncio.run(run(parser.parse_args().rounds))
