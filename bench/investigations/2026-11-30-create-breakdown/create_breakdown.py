"""Where a task's create latency goes, one ``tools/call`` at a time.

    .venv/bin/python bench/investigations/2026-11-30-create-breakdown/create_breakdown.py \\
        --n 100 > bench/investigations/2026-11-30-create-breakdown/results.md

Embedded default (dev server on a fresh SQLite file, in-process worker), FastMCP
``Client`` on the in-memory transport. Each create is timed at four points --
the client's call, entry to and exit from the extension's ``tools/call``
interceptor, and the workflow start inside it -- with and without eager
workflow start (the embedded default uses it: the start hands the first workflow
task to the in-process worker). Each task is waited on before the next create,
so creates do not queue behind each other.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/: support/, the benchmarks

import fastmcp_tasks  # noqa: F401  (client half)
from fastmcp import Client
from fastmcp_tasks import call_tool_task
from support.servers import echo_server

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.server.extension import TemporalTasks as Extension
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.server.tasks.starter import WorkflowStarter

MARKS: dict[str, float] = {}
STEPS = [
    ("client → interceptor (MCP request path in)", "called", "entered"),
    ("interceptor → start (tool lookup, validation, caller capture, input)", "entered", "rpc"),
    ("start (UI summary, request building, `StartWorkflowExecution` RPC)", "rpc", "started"),
    ("start → interceptor exit", "started", "left"),
    ("interceptor exit → client (MCP response path out)", "left", "returned"),
    ("total create", "called", "returned"),
]


def timed(name_in: str, name_out: str, fn: Callable[..., Awaitable[Any]]) -> Any:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        MARKS[name_in] = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            MARKS[name_out] = time.perf_counter()

    return wrapper


async def breakdown(n: int, eager: bool) -> dict[str, list[float]]:
    extension = TemporalTasks(data_dir=tempfile.mkdtemp(prefix="bench-create-"), ui=False)
    samples: dict[str, list[float]] = {label: [] for label, _, _ in STEPS}
    async with Client(echo_server(extension)) as client:
        engine = extension.engine
        engine.eager_start = eager
        for i in range(n + 10):
            MARKS["called"] = time.perf_counter()
            task = await call_tool_task(client, "echo", {"text": str(i)})
            MARKS["returned"] = time.perf_counter()
            if i >= 10:  # the first calls warm pollers and caches
                for label, start, end in STEPS:
                    samples[label].append((MARKS[end] - MARKS[start]) * 1000)
            handle = engine.client.get_workflow_handle(workflow_id_for(task.task_id, None))
            await handle.result()
    return samples


async def main(n: int) -> None:
    Extension.intercept_tool_call = timed("entered", "left", Extension.intercept_tool_call)  # type: ignore[method-assign]
    WorkflowStarter.start = timed("rpc", "started", WorkflowStarter.start)  # type: ignore[method-assign]
    with_eager = await breakdown(n, eager=True)
    without = await breakdown(n, eager=False)
    print(f"n = {n} creates each; p50 in ms")
    print()
    print("| step | eager start (the embedded default) | no eager start |")
    print("|---|---|---|")
    for label, _, _ in STEPS:
        print(
            f"| {label} | {statistics.median(with_eager[label]):.2f} | "
            f"{statistics.median(without[label]):.2f} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100)
    asyncio.run(main(parser.parse_args().n))
