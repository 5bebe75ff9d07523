"""What one default no-op task costs on the leg path, beside local legs and the raw engine.

    .venv/bin/python bench/leg_costs.py --n 400 --concurrency 1 20 --rounds 8 \
        > bench/results/leg_costs.md

Each task is created through the MCP path (in-memory FastMCP ``Client``,
``tools/call``) and waited on with a long poll on its workflow's result, so no
client polling is measured: only what creating and running the task costs
this process (client, MCP server, worker) and the dev server. Rows:

- **default**: ``TemporalTasks()`` as shipped (one regular activity leg);
- **local legs** (``ToolOptions(local_legs=True)``): what the regular activity
  leg costs (no progress, cancel at the next workflow-task heartbeat);
- **raw engine**, eager start, one activity and one local activity: the floor.

Every row runs on the same dev server, round-robin in ``--rounds`` blocks; the
history of one task per row gives its events.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import fastmcp_tasks  # noqa: F401  (the client half: declares the tasks extension)
from fastmcp import Client
from support.measure import cpu_seconds
from support.raw_engine import RUNNER, EchoWorkflow, echo_activity
from support.servers import echo_server
from support.smoke import parse_args
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowHandle
from temporalio.worker import Worker

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.server.tasks.starter import ToolOptions

#: Runs one task to its end; returns its workflow handle.
RunOne = Callable[[int], Awaitable[WorkflowHandle[Any, Any]]]


@dataclass
class Row:
    name: str
    run_one: RunOne
    elapsed: float = 0.0
    cpu_me: float = 0.0
    cpu_backend: float = 0.0
    done: int = 0
    events: str = ""


def mcp_task(client: Client, extension: TemporalTasks, tool: str) -> RunOne:
    async def run_one(i: int) -> WorkflowHandle[Any, Any]:
        task = await call_tool_task(client, tool, {"text": str(i)})
        engine = extension.engine
        workflow_id = workflow_id_for(task.task_id, None, engine.scope_secret)
        handle = engine.client.get_workflow_handle(workflow_id)
        await handle.result()
        return handle

    return run_one


def raw_task(client: TemporalClient, local: bool) -> RunOne:
    async def run_one(i: int) -> WorkflowHandle[Any, Any]:
        handle = await client.start_workflow(
            EchoWorkflow.run,
            args=["x", local],
            id=f"leg-costs-raw-{local}-{i}-{time.time_ns()}",
            task_queue="leg-costs-raw",
            request_eager_start=True,
        )
        await handle.result()
        return handle

    return run_one


async def measure(row: Row, n: int, concurrency: int, backend_pid: int) -> None:
    indexes = iter(range(n))

    async def worker() -> None:
        for i in indexes:
            await row.run_one(i)

    me, backend = cpu_seconds(os.getpid()), cpu_seconds(backend_pid)
    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    row.elapsed += time.perf_counter() - began
    row.cpu_me += cpu_seconds(os.getpid()) - me
    row.cpu_backend += cpu_seconds(backend_pid) - backend
    row.done += n


async def event_summary(handle: WorkflowHandle[Any, Any]) -> str:
    kinds = Counter(
        EventType.Name(event.event_type).removeprefix("EVENT_TYPE_").lower()
        for event in (await handle.fetch_history()).events
    )
    total = sum(kinds.values())
    notable = ("marker_recorded", "upsert_workflow_search_attributes", "activity_task_scheduled")
    return f"{total} ({', '.join(f'{kinds[k]} {k}' for k in notable)})"


async def main(n: int, concurrencies: list[int], rounds: int) -> None:
    async with AsyncExitStack() as stack:
        data_dir = tempfile.mkdtemp(prefix="bench-leg-costs-")
        rows: list[Row] = []
        extensions: list[TemporalTasks] = []
        for name, local in [
            ("default", False),
            ("local legs (`ToolOptions(local_legs=True)`)", True),
        ]:
            # One server per row on the same data directory: the same dev server,
            # each with its own task queue (named after the server) and worker.
            extension = TemporalTasks(
                data_dir=data_dir, ui=False, tools={"echo": ToolOptions(local_legs=local)}
            )
            server = echo_server(extension, f"leg-costs-{len(rows)}", adaptive=True)
            client = await stack.enter_async_context(Client(server))
            rows.append(Row(name, mcp_task(client, extension, "echo")))
            extensions.append(extension)
        dev_server = extensions[0].dev_server
        assert dev_server is not None
        backend_pid = dev_server.temporal_pid
        raw = await TemporalClient.connect(dev_server.address)
        await stack.enter_async_context(
            Worker(
                raw,
                task_queue="leg-costs-raw",
                workflows=[EchoWorkflow],
                activities=[echo_activity],
                workflow_runner=RUNNER,
            )
        )
        rows.append(Row("raw engine: workflow + activity, eager start", raw_task(raw, False)))
        rows.append(Row("raw engine: workflow + local activity, eager start", raw_task(raw, True)))
        for row in rows:  # warm-up: pollers, caches, sandboxes
            for i in range(10):
                handle = await row.run_one(i)
            row.events = await event_summary(handle)
        results: dict[int, list[Row]] = {}
        for concurrency in concurrencies:
            measured = [Row(row.name, row.run_one, events=row.events) for row in rows]
            for round_number in range(rounds):
                share = n // rounds + (1 if round_number < n % rounds else 0)
                for row in measured:
                    await measure(row, share, concurrency, backend_pid)
            results[concurrency] = measured
    print_results(results, n, rounds)


def print_results(results: dict[int, list[Row]], n: int, rounds: int) -> None:
    print(
        f"n = {n} tasks per row and concurrency, {rounds} interleaved rounds; each task waited "
        "on with a long poll on its workflow (no client polling); CPU in ms per task"
    )
    print()
    print("| row | concurrency | tasks/s | CPU this process | CPU dev server | history events |")
    print("|---|---|---|---|---|---|")
    for concurrency, rows in results.items():
        for row in rows:
            print(
                f"| {row.name} | {concurrency} | {row.done / row.elapsed:.1f} | "
                f"{row.cpu_me / row.done * 1000:.1f} | {row.cpu_backend / row.done * 1000:.1f} | "
                f"{row.events} |"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 20])
    parser.add_argument("--rounds", type=int, default=8)
    args = parse_args(parser, n=2, concurrency=[1, 2], rounds=1)
    asyncio.run(main(args.n, args.concurrency, args.rounds))
