"""fastmcp-temporal vs the raw engine vs fastmcp-tasks, side by side in one run.

    .venv/bin/python bench/compare.py --n 300 --concurrency 1 20 > bench/results/compare.md

Workload: a no-op ``echo`` task tool. Every system runs the same driver on the
same machine in the same run: ``concurrency`` workers, each creating a task,
then polling it every ``--poll-ms`` until it is terminal.

- **fastmcp-temporal**: the embedded default (``TemporalTasks()``: local dev
  server on a SQLite file in WAL mode, in-process worker), FastMCP ``Client``
  with the ``fastmcp_tasks`` client half, in-memory transport.
- **raw engine** on the *same* dev server: plain ``temporalio`` client and
  worker, one workflow with one activity; also with a local activity, and with
  eager workflow start (and both). ``start_workflow`` is "create"; a row either
  waits on ``result()`` (a long poll, no polling cost: the ceiling) or polls a
  ``status`` query until it says ``completed``, as MCP clients poll ``tasks/get``.
- **FastMCP synchronous ``tools/call``** of the same tool, no task: the MCP
  request path alone, the floor under any task's create latency.
- **fastmcp-tasks 4.1.4** (the peer) on Docket ``memory://`` and on a real
  ``redis-server`` with ``appendonly yes`` (durable like Temporal), same client.

CPU seconds per task are read from ``/proc`` for this process (client, MCP
server and worker) and for the backend process (Temporal dev server or Redis).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import fastmcp_tasks  # noqa: F401  (client half)
from fastmcp import Client, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension, call_tool_task
from raw_engine import RUNNER, EchoLocalWorkflow, EchoWorkflow, echo_activity
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.server.devserver import free_port
from fastmcp_temporal.server.starter import ToolOptions

TICKS = os.sysconf("SC_CLK_TCK")
TERMINAL = {"completed", "failed", "cancelled"}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


@dataclass
class Run:
    creates: list[float] = field(default_factory=list)
    gets: list[float] = field(default_factory=list)
    e2e: list[float] = field(default_factory=list)
    errors: int = 0


def pct(samples: list[float], q: float) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


# A system: (create, get) callables; get returns the status string.
Create = Callable[[int], Awaitable[Any]]
Get = Callable[[Any], Awaitable[str]]


async def drive(
    n: int, concurrency: int, create: Create, get: Get, poll_s: float, finish: Get | None = None
) -> tuple[Run, float]:
    run = Run()
    next_index = iter(range(n))

    async def worker() -> None:
        for i in next_index:
            try:
                started = time.perf_counter()
                handle = await create(i)
                run.creates.append(time.perf_counter() - started)
                if finish is not None:
                    await finish(handle)
                else:
                    while True:
                        before = time.perf_counter()
                        status = await get(handle)
                        run.gets.append(time.perf_counter() - before)
                        if status in TERMINAL:
                            break
                        await asyncio.sleep(poll_s)
                run.e2e.append(time.perf_counter() - started)
            except Exception:
                run.errors += 1

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return run, time.perf_counter() - began


def echo_server(extension: Any) -> FastMCP:
    mcp = FastMCP("bench")
    mcp.add_extension(extension)

    @mcp.tool(task=TaskConfig(mode="required", poll_interval=timedelta(milliseconds=20)))
    async def echo(text: str) -> str:
        return text

    @mcp.tool(task=TaskConfig(mode="required", poll_interval=timedelta(milliseconds=20)))
    async def echo_local(text: str) -> str:
        return text

    @mcp.tool
    async def echo_sync(text: str) -> str:
        return text

    return mcp


@asynccontextmanager
async def mcp_sync_call(server: FastMCP) -> AsyncIterator[tuple[Create, Get]]:
    """A plain, synchronous ``tools/call`` of the same no-op tool: no task, no backend.

    Its latency is the floor of any task's "create": the MCP request path
    (JSON-RPC, middleware, tool lookup, argument validation) that every task
    creation also takes before it reaches its backend.
    """
    async with Client(server) as client:

        async def create(i: int) -> Any:
            return await client.call_tool("echo_sync", {"text": str(i)})

        async def get(result: Any) -> str:
            return "completed"

        for i in range(10):
            await create(i)
        yield create, get


@asynccontextmanager
async def mcp_system(server: FastMCP, tool: str = "echo") -> AsyncIterator[tuple[Create, Get]]:
    async with Client(server) as client:

        async def create(i: int) -> Any:
            return await call_tool_task(client, tool, {"text": str(i)})

        async def get(task: Any) -> str:
            return (await task.status()).status

        for i in range(10):  # warm up
            task = await create(i)
            while await get(task) not in TERMINAL:
                await asyncio.sleep(0.01)
        yield create, get


@asynccontextmanager
async def redis_server(appendonly: bool) -> AsyncIterator[tuple[str, int]]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    data = tempfile.mkdtemp(prefix="bench-redis-")
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            data,
            "--save",
            "",
            "--appendonly",
            "yes" if appendonly else "no",
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        await asyncio.sleep(0.5)
        yield f"redis://127.0.0.1:{port}/0", process.pid
    finally:
        process.terminate()
        process.wait()


@dataclass
class Row:
    name: str
    concurrency: int
    tasks_per_s: float
    create_p50: float
    get_p50: float
    text: str


async def main(n: int, concurrencies: list[int], poll_ms: int) -> None:
    poll_s = poll_ms / 1000
    rows: list[Row] = []
    me = os.getpid()

    async def measure(
        name: str,
        system: AbstractAsyncContextManager[tuple[Create, Get]],
        backend_pid: Callable[[], int | None],
        finish: Get | None = None,
    ) -> None:
        async with system as (create, get):
            for concurrency in concurrencies:
                pid = backend_pid()
                cpu_me, cpu_backend = cpu_seconds(me), cpu_seconds(pid) if pid else 0.0
                run, elapsed = await drive(n, concurrency, create, get, poll_s, finish)
                cpu_me = cpu_seconds(me) - cpu_me
                cpu_backend = (cpu_seconds(pid) - cpu_backend) if pid else float("nan")
                done = len(run.e2e)
                text = (
                    f"| {name} | {concurrency} | {done / elapsed:.1f} | "
                    f"{pct(run.creates, 0.5):.1f} / {pct(run.creates, 0.99):.1f} | "
                    f"{pct(run.gets, 0.5):.1f} / {pct(run.gets, 0.99):.1f} | "
                    f"{pct(run.e2e, 0.5):.0f} / {pct(run.e2e, 0.99):.0f} | "
                    f"{cpu_me / done * 1000:.1f} | {cpu_backend / done * 1000:.1f} | {run.errors} |"
                )
                rows.append(
                    Row(
                        name,
                        concurrency,
                        done / elapsed,
                        pct(run.creates, 0.5),
                        pct(run.gets, 0.5),
                        text,
                    )
                )
                print(text, flush=True)

    # 1. fastmcp-temporal, embedded default.
    extension = TemporalTasks(
        data_dir=tempfile.mkdtemp(prefix="bench-temporal-"),
        ui=False,
        tools={"echo_local": ToolOptions(local_legs=True)},
    )
    dev_pid = lambda: extension.dev_server.process.pid if extension.dev_server else None  # noqa: E731
    ours_server = echo_server(extension)

    @asynccontextmanager
    async def ours() -> AsyncIterator[tuple[Create, Get]]:
        async with mcp_system(ours_server) as pair:
            yield pair
            await raw_engine_runs()

    async def raw_engine_runs() -> None:
        # 2. The raw engine on the same dev server, while it is up.
        assert extension.dev_server is not None
        raw = await TemporalClient.connect(extension.dev_server.address)
        runner = RUNNER
        for label, wf, eager in [
            (RAW_START, EchoWorkflow, False),
            ("raw engine: workflow + local activity", EchoLocalWorkflow, False),
            ("raw engine: workflow + activity, eager start", EchoWorkflow, True),
            ("raw engine: workflow + local activity, eager start", EchoLocalWorkflow, True),
        ]:
            queue = f"raw-{wf.__name__}-{eager}"

            @asynccontextmanager
            async def raw_system(
                wf: Any = wf, eager: bool = eager, queue: str = queue
            ) -> AsyncIterator[tuple[Create, Get]]:
                async with Worker(
                    raw,
                    task_queue=queue,
                    workflows=[wf],
                    activities=[echo_activity],
                    workflow_runner=runner,
                ):
                    prefix = f"{queue}-{time.time_ns()}"

                    async def create(i: int) -> Any:
                        return await raw.start_workflow(
                            wf.run,
                            "x",
                            id=f"{prefix}-{i}-{time.time_ns()}",
                            task_queue=queue,
                            request_eager_start=eager,
                        )

                    async def get(handle: Any) -> str:
                        return str(await handle.query(wf.status))

                    for i in range(10):
                        await (await create(i)).result()
                    yield create, get

            async def finish(handle: Any) -> str:
                await handle.result()
                return "completed"

            await measure(label, raw_system(), dev_pid, finish=finish)
            # The query latency of the raw engine, for the `tasks/get` column.
            await measure(label + " (polled by query)", raw_system(), dev_pid)

    await measure(OURS, ours(), dev_pid)
    await measure(OURS_LOCAL, mcp_system(ours_server, tool="echo_local"), dev_pid)
    await measure(SYNC_FLOOR, mcp_sync_call(ours_server), lambda: None)

    # 3. The peer: fastmcp-tasks on Docket, memory:// and Redis with AOF.
    await measure(
        "fastmcp-tasks, Docket memory://",
        mcp_system(echo_server(TasksExtension(url="memory://"))),
        lambda: None,
    )
    async with redis_server(appendonly=True) as (url, redis_pid):
        await measure(
            "fastmcp-tasks, Redis (AOF on)",
            mcp_system(echo_server(TasksExtension(url=url))),
            lambda: redis_pid,
        )

    print()
    print(
        f"n = {n} tasks per row, poll every {poll_ms} ms; latencies in ms (p50 / p99); "
        "CPU in ms per task"
    )
    print()
    print(
        "| system | concurrency | tasks/s | create p50 / p99 | get p50 / p99 | "
        "end to end p50 / p99 | CPU this process | CPU backend | errors |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(row.text for row in rows))
    print()
    print_ratios(rows, concurrencies)


RAW_START = "raw engine: workflow + activity"
OURS = "fastmcp-temporal (embedded dev server)"
OURS_LOCAL = "fastmcp-temporal, local legs (`ToolOptions(local_legs=True)`)"
SYNC_FLOOR = "FastMCP synchronous `tools/call`, no task (the MCP path alone)"


def print_ratios(rows: list[Row], concurrencies: list[int]) -> None:
    """The issue's targets, as ratios between rows of this one run."""
    print("| ratio (this run) | concurrency | value |")
    print("|---|---|---|")
    for concurrency in concurrencies:
        at = {row.name: row for row in rows if row.concurrency == concurrency}
        raw = [row for name, row in at.items() if name.startswith("raw engine")]
        best = max(raw, key=lambda row: row.tasks_per_s)
        for name in (OURS, OURS_LOCAL):
            ratio = at[name].tasks_per_s / best.tasks_per_s
            print(
                f"| throughput {name} / best raw ({best.name}) | {concurrency} | "
                f"{at[name].tasks_per_s:.1f} / {best.tasks_per_s:.1f} = **{ratio:.2f} x** |"
            )
        start = at[RAW_START].create_p50
        for name in (OURS, SYNC_FLOOR):
            create = at[name].create_p50
            print(
                f"| create p50 {name} / raw `start_workflow` | {concurrency} | "
                f"{create:.1f} / {start:.1f} ms = **{create / start:.2f} x** |"
            )
        print(f"| `tasks/get` p50 {OURS} | {concurrency} | **{at[OURS].get_p50:.1f} ms** |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 20])
    parser.add_argument("--poll-ms", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.concurrency, args.poll_ms))
