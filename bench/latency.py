"""Unloaded latency of create, tasks/get and a no-op task end to end.

    .venv/bin/python bench/latency.py --n 200

Runs against the embedded default (``TemporalTasks()``: a local dev server on
a fresh SQLite file in WAL mode, in-process worker) through a FastMCP
``Client`` on the in-memory transport, one request at a time. For scale, the
same run measures the raw engine: ``start_workflow`` and a query on one
workflow of the same dev server, and a plain one-activity workflow end to end.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import fastmcp_tasks  # noqa: F401
from fastmcp import Client, FastMCP
from fastmcp_tasks import call_tool_task
from support.raw_engine import RUNNER, EchoWorkflow, echo_activity
from support.smoke import parse_args
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import TemporalTasks


async def timed(n: int, call: Callable[[int], Awaitable[Any]]) -> list[float]:
    samples = []
    for i in range(n):
        start = time.perf_counter()
        await call(i)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def row(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"| {name} | {len(samples)} | {statistics.median(ordered):.1f} | {p99:.1f} |"


async def main(n: int) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="fastmcp-temporal-bench-"))
    extension = TemporalTasks(data_dir=data_dir, ui=False)
    mcp = FastMCP("bench")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def echo(text: str) -> str:
        return text

    rows = []
    async with Client(mcp) as client:
        for i in range(10):  # warm up: first calls pay for pollers and caches
            await client.call_tool("echo", {"text": str(i)})
        tasks = []

        async def create(i: int) -> None:
            tasks.append(await call_tool_task(client, "echo", {"text": str(i)}))

        rows.append(row("create (`tools/call` → `CreateTaskResult`)", await timed(n, create)))
        await tasks[-1].wait()
        done = tasks[-1]
        rows.append(row("`tasks/get`, completed task", await timed(n, lambda i: done.status())))
        running = await call_tool_task(client, "echo", {"text": "x"})
        rows.append(
            row("`tasks/get`, any state (fresh tasks)", await timed(n, lambda i: tasks[i].status()))
        )
        await running.wait()
        right_after_create: list[float] = []
        for i in range(n):
            fresh = await call_tool_task(client, "echo", {"text": str(i)})
            before = time.perf_counter()
            await fresh.status()  # its start or its leg is still being applied
            right_after_create.append((time.perf_counter() - before) * 1000)
            await fresh.wait()
        rows.append(row("`tasks/get` right after create", right_after_create))
        rows.append(
            row(
                "no-op task end to end (`call_tool`)",
                await timed(n, lambda i: client.call_tool("echo", {"text": str(i)})),
            )
        )

        assert extension.dev_server is not None
        raw = await TemporalClient.connect(extension.dev_server.address)
        async with Worker(
            raw,
            task_queue="raw",
            workflows=[EchoWorkflow],
            activities=[echo_activity],
            # This module imports the MCP stack, which the sandbox must pass through.
            workflow_runner=RUNNER,
        ):
            for i in range(10):
                await raw.execute_workflow(EchoWorkflow.run, "w", id=f"warm-{i}", task_queue="raw")
            handles = []

            async def start(i: int) -> None:
                handles.append(
                    await raw.start_workflow(EchoWorkflow.run, "x", id=f"s-{i}", task_queue="raw")
                )

            rows.append(row("raw engine: `start_workflow`", await timed(n, start)))
            await handles[-1].result()
            rows.append(
                row(
                    "raw engine: one-activity workflow end to end",
                    await timed(
                        n,
                        lambda i: raw.execute_workflow(
                            EchoWorkflow.run, "x", id=f"e-{i}", task_queue="raw"
                        ),
                    ),
                )
            )
    print("| operation | n | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    asyncio.run(main(parse_args(parser, n=3).n))
