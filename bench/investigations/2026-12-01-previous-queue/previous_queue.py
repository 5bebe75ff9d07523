"""What serving the embedded default's old task queue (``mcp-tasks``) costs after an upgrade.

    .venv/bin/python bench/investigations/2026-12-01-previous-queue/previous_queue.py \\
        > bench/investigations/2026-12-01-previous-queue/results.md

``server.temporal.previous_queue`` counts, at every lifespan start on the embedded
server, the open tasks of this server's tools on ``mcp-tasks``, and serves that
queue with a second worker while any are left. Measured here, each on a fresh
embedded Temporal in a temporary data directory:

* *count*: the start-up visibility call, with no tasks and with 200 open tasks
  on the old queue (every lifespan pays it; the warm lifespan is ~14 ms);
* *renamed*: the start-up look for a renamed server's tasks
  (``unpolled_queues``: one visibility list, plus one ``DescribeTaskQueue`` per
  queue found), with no tasks and with 200 open tasks on ``mcp-tasks-renamed``
  (``--only-startup`` runs just these two parts);
* *idle worker*: CPU of this process and of ``temporal`` over 20 s with one
  worker, then with the old queue's worker too (what "for the process's life"
  would cost once the old tasks are done);
* *drain*: ``--tasks`` tasks per server left unpolled on ``mcp-tasks`` (front
  ends without workers, the old queue), then servers after the upgrade start
  and we time until all are completed: one server, then two servers with
  different tools sharing the directory, whose legs land on each other's
  worker (``UnknownTool``) and retry.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from fastmcp import Client, FastMCP
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import call_tool_task, enable_transparent_tasks, get_task
from fastmcp_temporal.server.temporal import previous_queue
from fastmcp_temporal.server.temporal.previous_queue import (
    PREVIOUS_EMBEDDED_QUEUE,
    count_open_tasks,
    unpolled_queues,
)

IDLE_S = 20.0


def app(name: str, extension: TemporalTasks) -> FastMCP:
    """Server ``name`` with one task tool, also called ``name``."""
    mcp = FastMCP(name)
    mcp.add_extension(extension)

    async def tool(n: int) -> int:
        return n

    mcp.tool(tool, name=name, task=True)
    return mcp


async def leave_on_old_queue(
    data_dir: Path, name: str, count: int, queue: str = PREVIOUS_EMBEDDED_QUEUE
) -> list[str]:
    """Tasks created before the upgrade (or the rename) that no worker ran yet."""
    front_end = TemporalTasks(data_dir=data_dir, ui=False, task_queue=queue, run_worker=False)
    async with Client(app(name, front_end)) as client:
        tasks = await asyncio.gather(
            *(call_tool_task(client, name, {"n": i}) for i in range(count))
        )
    return [task.task_id for task in tasks]


async def drain_s(data_dir: Path, names: Sequence[str], count: int) -> float:
    """From the upgraded servers' start until every old task is completed."""
    left = {name: await leave_on_old_queue(data_dir, name, count) for name in names}
    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for name in names:
            group.create_task(_finish(data_dir, name, left[name]))
    return time.perf_counter() - started


async def _finish(data_dir: Path, name: str, task_ids: list[str]) -> None:
    async with Client(app(name, TemporalTasks(data_dir=data_dir, ui=False))) as client:
        while True:
            states = [await get_task(client.session, task_id) for task_id in task_ids]
            if all(state.status == "completed" for state in states):
                return
            await asyncio.sleep(0.1)


RENAMED_QUEUE = f"{PREVIOUS_EMBEDDED_QUEUE}-renamed"


async def lookup_ms(
    data_dir: Path,
    queue: str,
    open_tasks: int,
    lookup: Callable[[TemporalClient], Awaitable[object]],
    expected: object,
    runs: int = 20,
) -> list[float]:
    """``lookup``'s duration, ``runs`` times, with ``open_tasks`` unpolled tasks on ``queue``."""
    if open_tasks:
        await leave_on_old_queue(data_dir, "counted", open_tasks, queue=queue)
    holder = TemporalTasks(data_dir=data_dir, ui=False, run_worker=False)
    async with Client(app("holder", holder)):
        assert holder.dev_server is not None
        client = await TemporalClient.connect(holder.dev_server.address)
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            found = await lookup(client)
            times.append((time.perf_counter() - started) * 1000)
            assert found == expected, found
    return times


async def count_ms(data_dir: Path, open_tasks: int) -> list[float]:
    """The start-up count on the old queue."""

    def count(client: TemporalClient) -> Awaitable[int]:
        return count_open_tasks(client, PREVIOUS_EMBEDDED_QUEUE, {"counted"})

    return await lookup_ms(data_dir, PREVIOUS_EMBEDDED_QUEUE, open_tasks, count, open_tasks)


async def unpolled_ms(data_dir: Path, open_tasks: int) -> list[float]:
    """The start-up look for a renamed server's tasks."""

    def look(client: TemporalClient) -> Awaitable[object]:
        return unpolled_queues(client, "mcp-tasks-holder", {"counted"})

    expected = {RENAMED_QUEUE: open_tasks} if open_tasks else {}
    return await lookup_ms(data_dir, RENAMED_QUEUE, open_tasks, look, expected)


def cpu_s(pid: int | None = None) -> float:
    if pid is None:
        return time.process_time()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, clock ticks


async def idle_cpu(data_dir: Path, with_old_queue_worker: bool) -> tuple[float, float]:
    """CPU seconds (this process, temporal) over ``IDLE_S`` with one or two idle workers."""
    recheck_s = previous_queue.RECHECK_S
    if with_old_queue_worker:  # one old task starts it; no recheck in the window stops it
        await leave_on_old_queue(data_dir, "idle", 1)
        previous_queue.RECHECK_S = 3600
    extension = TemporalTasks(data_dir=data_dir, ui=False)
    try:
        return await _idle(extension)
    finally:
        previous_queue.RECHECK_S = recheck_s


async def _idle(extension: TemporalTasks) -> tuple[float, float]:
    async with Client(app("idle", extension)):
        assert extension.dev_server is not None
        temporal = extension.dev_server.temporal_pid
        await asyncio.sleep(2)
        own, server = cpu_s(), cpu_s(temporal)
        await asyncio.sleep(IDLE_S)
        return cpu_s() - own, cpu_s(temporal) - server


def row(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    return f"| {name} | {len(ordered)} | {statistics.median(ordered):.1f} | {ordered[-1]:.1f} |"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only-startup", action="store_true", help="the two start-up tables")
    args = parser.parse_args()
    enable_transparent_tasks()

    def fresh() -> tempfile.TemporaryDirectory[str]:
        return tempfile.TemporaryDirectory()

    with fresh() as empty, fresh() as full:
        none, many = await count_ms(Path(empty), 0), await count_ms(Path(full), 200)
        await asyncio.sleep(4)  # past the linger: the servers stop before the dirs go
    print("| start-up count on the old queue | calls | p50 ms | max ms |")
    print("|---|---|---|---|")
    print(row("no tasks there", none))
    print(row("200 open tasks there", many))
    print()
    with fresh() as empty, fresh() as full:
        none, many = await unpolled_ms(Path(empty), 0), await unpolled_ms(Path(full), 200)
        await asyncio.sleep(4)
    print("| start-up look for a renamed server's tasks | calls | p50 ms | max ms |")
    print("|---|---|---|---|")
    print(row("no tasks on other queues", none))
    print(row("200 open tasks on one unpolled queue", many))
    print()
    if args.only_startup:
        return
    print(f"| idle, {IDLE_S:.0f} s | this process CPU s | temporal CPU s |")
    print("|---|---|---|")
    for label, second in (("one worker", False), ("plus the old queue's worker", True)):
        with fresh() as directory:
            own, server = await idle_cpu(Path(directory), second)
            await asyncio.sleep(4)
        print(f"| {label} | {own:.2f} | {server:.2f} |")
    print()
    print(f"| drain {args.tasks} old tasks per server | runs | p50 s | max s |")
    print("|---|---|---|---|")
    for label, names in (
        ("one server", ["alpha"]),
        ("two servers, different tools", ["alpha", "beta"]),
    ):
        times = []
        for _ in range(args.runs):
            with fresh() as directory:
                times.append(await drain_s(Path(directory), names, args.tasks))
                await asyncio.sleep(4)  # past the linger: the server stops before the dir goes
        print(row(label, times))


if __name__ == "__main__":
    asyncio.run(main())
