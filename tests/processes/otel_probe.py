"""One traced task, in its own process: ``python -m tests.processes.otel_probe ADDRESS QUEUE``.

The global tracer provider is process-wide and can be set once, so the probe
gets a process of its own: an in-memory span exporter, a FastMCP server with
``TemporalTasks(tracing=True)`` and its in-process worker, one task polled a
few times with ``tasks/get``, then every finished span printed as JSON lines.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from fastmcp import Client, FastMCP
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import call_tool_task, enable_transparent_tasks


async def main(address: str, task_queue: str) -> None:
    enable_transparent_tasks()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    mcp = FastMCP("traced")
    mcp.add_extension(TemporalTasks(address=address, task_queue=task_queue, tracing=True))

    @mcp.tool(task=True)
    async def shout(text: str) -> str:
        await asyncio.sleep(0.5)
        return text.upper()

    async with Client(mcp) as client:
        task = await call_tool_task(client, "shout", {"text": "traced"})
        for _ in range(5):
            await task.status()
        final = await task.wait(timeout=30)
        for _ in range(3):
            await task.status()
    assert final.status == "completed", final
    for span in exporter.get_finished_spans():
        context = span.get_span_context()
        print(
            json.dumps(
                {
                    "name": span.name,
                    "trace": f"{context.trace_id:032x}",
                    "id": f"{context.span_id:016x}",
                    "parent": f"{span.parent.span_id:016x}" if span.parent else None,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
    sys.stdout.flush()
    os._exit(0)  # temporalio can crash at interpreter exit (sdk-python#300)
