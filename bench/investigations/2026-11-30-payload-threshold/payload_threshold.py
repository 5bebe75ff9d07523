"""Where should payloads leave the history? Inline vs the disk store, by size.

    .venv/bin/python bench/investigations/2026-11-30-payload-threshold/payload_threshold.py \\
        > bench/investigations/2026-11-30-payload-threshold/results.md

Two ``TemporalTasks`` on one embedded dev server (SQLite, WAL), in this
process, differing only in ``payload_threshold``: 8 KiB (every result of these
sizes goes to the disk store: two fsync'd blobs per task, the leg's outcome and
the task's result) and 1.9 MB (everything inline in the history, as before the
store existed). A task tool returns ``size`` bytes of text; each row is the
median of ``--n`` tasks, created and polled every 20 ms until completed, rows
interleaved round-robin so a slow spell hits both alike. Also printed: the
task's history size as Temporal stores it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/: support/, the benchmarks

import fastmcp_tasks  # noqa: F401  (client half)
from fastmcp import Client, FastMCP
from fastmcp.tools import ToolResult
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import call_tool_task
from mcp_types import TextContent
from support.payload_server import text_of
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.server.tasks.engine import workflow_id_for

SIZES = [16_000, 64_000, 128_000, 256_000, 512_000, 900_000]
THRESHOLDS = {"disk store (threshold 8 KiB)": 8 * 1024, "inline (threshold 1.9 MB)": 1_900_000}


def server(tasks: TemporalTasks) -> FastMCP:
    mcp = FastMCP("threshold")
    mcp.add_extension(tasks)

    @mcp.tool(task=TaskConfig(mode="required", poll_interval=timedelta(milliseconds=20)))
    async def produce(size: int) -> ToolResult:
        return ToolResult(content=[TextContent(type="text", text=text_of(size))])

    return mcp


async def one_task(client: Client, size: int) -> tuple[float, str]:
    started = time.perf_counter()
    task = await call_tool_task(client, "produce", {"size": size})
    while (await task.status()).status != "completed":
        await asyncio.sleep(0.02)
    return time.perf_counter() - started, task.task_id


async def main(n: int) -> None:
    async with AsyncExitStack() as stack:
        data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-threshold-"))
        dev = await DevServer.start(data_dir=Path(data_dir), ui=False)
        stack.callback(dev.stop)
        temporal = await TemporalClient.connect(dev.address)
        clients: dict[str, Client] = {}
        for index, (name, threshold) in enumerate(THRESHOLDS.items()):
            tasks = TemporalTasks(
                address=dev.address,
                data_dir=data_dir,
                task_queue=f"threshold-{index}",
                payload_threshold=threshold,
            )
            clients[name] = await stack.enter_async_context(Client(server(tasks)))
        for client in clients.values():
            for _ in range(5):
                await one_task(client, 1000)
        print("| result size | where | end to end p50 ms | history KB |")
        print("|---|---|---|---|")
        for size in SIZES:
            samples: dict[str, list[float]] = {name: [] for name in clients}
            history: dict[str, int] = {}
            for _ in range(n):
                for name, client in clients.items():
                    elapsed, task_id = await one_task(client, size)
                    samples[name].append(elapsed)
                    if name not in history:
                        handle = temporal.get_workflow_handle(workflow_id_for(task_id, None))
                        events = (await handle.fetch_history()).events
                        history[name] = sum(event.ByteSize() for event in events)
            for name in clients:
                median = statistics.median(samples[name]) * 1000
                print(f"| {size // 1000} KB | {name} | {median:.0f} | {history[name] / 1000:.0f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20)
    asyncio.run(main(parser.parse_args().n))
