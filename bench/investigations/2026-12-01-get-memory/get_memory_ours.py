"""The part of a big ``tasks/get`` that is ours: reading a finished task's result.

    .venv/bin/python bench/investigations/2026-12-01-get-memory/get_memory_ours.py \\
        > bench/investigations/2026-12-01-get-memory/results_ours.md

``get_memory.py`` (beside this file) measures the whole request in the server process; its
peak is the MCP SDK serializing the response. This measures, with
``tracemalloc`` in one process, what ``TaskRecords.closed_view`` (describe,
read the result from the store, decode, build the ``GetTaskResult``) holds at
its peak and what it still holds when it returns (the result itself, which the
SDK then serializes). Python allocations only: protobuf messages (upb) are
allocated outside Python's allocator, so a ``Payload`` being parsed is not
counted here; ``get_memory.py``'s RSS rows include everything.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import tracemalloc
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/: support/, the benchmarks

from fastmcp import Client
from support.payload_server import build, text_of
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import TasksClientExtension, call_tool_task
from fastmcp_temporal.server.core.codec import task_data_converter
from fastmcp_temporal.server.payloads.payload_store import PayloadStoreSettings
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.server.tasks.task_records import TaskRecords
from fastmcp_temporal.testing import shared_temporal
from fastmcp_temporal.workflows.models import TaskView

SIZES = {"10 MB": 10_000_000, "50 MB": 50_000_000}


async def main(encrypted: bool) -> None:
    key = "00" * 32 if encrypted else None
    async with AsyncExitStack() as stack:
        data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-ours-")))
        temporal = await stack.enter_async_context(shared_temporal(data_dir / "temporal", ui=False))
        tasks = TemporalTasks(
            address=temporal.address, task_queue="bench-ours", data_dir=data_dir, encryption_key=key
        )
        client = await stack.enter_async_context(
            Client(build(tasks), extensions=[TasksClientExtension()])
        )
        storage = await PayloadStoreSettings.resolve(None, data_dir=data_dir).open(stack)
        reader = await TemporalClient.connect(
            temporal.address, data_converter=task_data_converter(key, payload_storage=storage)
        )
        records = TaskRecords(reader, ttl_ms=3_600_000, query_timeout=timedelta(seconds=60))
        print(f"encrypted: {encrypted}\n")
        print("| result | peak during the read, MB | held when it returns, MB | copies at peak |")
        print("|---|---|---|---|")
        for label, size in SIZES.items():
            task = await call_tool_task(client, "produce", {"size": size})
            await task.result()
            handle = reader.get_workflow_handle(
                workflow_id_for(task.task_id, None), result_type=TaskView
            )
            description = await records.describe(task.task_id, handle.id)
            tracemalloc.start()
            result = await records.closed_view(
                task.task_id, handle, description.status, description
            )
            held, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            assert (result.result or {})["content"][0]["text"] == text_of(size)
            print(f"| {label} | {peak / 1e6:.0f} | {held / 1e6:.0f} | {peak / size:.1f} |")
            del result
        print()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--encrypted", action="store_true")
    asyncio.run(main(parser.parse_args().encrypted))
