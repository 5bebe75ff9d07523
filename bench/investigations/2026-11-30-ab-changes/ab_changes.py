"""A/B measurements behind this round's changes, each side by side in one process.

    .venv/bin/python bench/investigations/2026-11-30-ab-changes/ab_changes.py \\
        > bench/investigations/2026-11-30-ab-changes/results.md

Embedded default (dev server on a fresh SQLite file, in-process worker),
FastMCP ``Client`` on the in-memory transport. Each pair alternates its two
variants in blocks, so both see the same machine:

1. reading a finished task: ``WorkflowHandle.describe()`` + ``memo()`` against
   the engine's own ``describe`` (the protobuf fields it needs), CPU per read;
2. a finished task's view in its memo (one ``describe`` per read) against
   reading the workflow's result (a second RPC): ``tasks/get`` latency on a
   finished task, and CPU per task of this process and of the dev server;
3. the argument validator: built for every ``tools/call`` against built once;
4. the workflow sandbox with and without ``beartype`` passed through, for a
   workflow module the sandbox re-imports (the raw benchmark workflow).
"""

from __future__ import annotations

import asyncio
import os
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
from support.measure import cpu_seconds
from support.raw_engine import EchoWorkflow, echo_activity
from support.servers import echo_server
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

import fastmcp_temporal.workflows.task_workflow as task_workflow
from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.server.protocol import creation
from fastmcp_temporal.server.tasks.engine import workflow_id_for

ROWS: list[str] = []


def row(change: str, variant: str, value: str) -> None:
    ROWS.append(f"| {change} | {variant} | {value} |")
    print(ROWS[-1], flush=True)


async def cpu_per_call(n: int, call: Callable[[], Awaitable[Any]]) -> float:
    before = time.process_time()
    for _ in range(n):
        await call()
    return (time.process_time() - before) / n * 1000


async def main() -> None:
    extension = TemporalTasks(data_dir=tempfile.mkdtemp(prefix="bench-ab-"), ui=False)
    server = echo_server(extension)
    async with Client(server) as client:
        engine = extension.engine
        assert extension.dev_server is not None
        dev = extension.dev_server.temporal_pid
        task = await call_tool_task(client, "echo", {"text": "x"})
        await task.wait()
        workflow_id = workflow_id_for(task.task_id, None)
        handle = engine.client.get_workflow_handle(workflow_id)

        # 1. describe through temporalio's conversion vs the engine's own.
        async def converted() -> None:
            description = await handle.describe()
            await description.memo()

        async def lean() -> None:
            description = await engine.records.describe(task.task_id, workflow_id)
            await engine.records.memo_view(task.task_id, description, closed=True)

        cpu: dict[str, list[float]] = {"converted": [], "lean": []}
        for _ in range(4):
            cpu["converted"].append(await cpu_per_call(200, converted))
            cpu["lean"].append(await cpu_per_call(200, lean))
        for name, label in (("converted", "`WorkflowHandle.describe()`"), ("lean", "own")):
            row(
                "describe + memo, CPU per read (ms)",
                label,
                f"{statistics.median(cpu[name]):.3f}",
            )

        # 2. finished view in the memo vs read from the workflow's result.
        totals = {True: [0.0, 0.0, 0, []], False: [0.0, 0.0, 0, []]}
        for block in range(10):
            in_memo = block % 2 == 0
            task_workflow.FINAL_MEMO_LIMIT = 16 * 1024 if in_memo else -1
            me, backend = cpu_seconds(os.getpid()), cpu_seconds(dev)
            for i in range(40):
                done = await call_tool_task(client, "echo", {"text": str(i)})
                while (await done.status()).status != "completed":
                    await asyncio.sleep(0.02)
                started = time.perf_counter()
                await done.status()
                totals[in_memo][3].append((time.perf_counter() - started) * 1000)
            total = totals[in_memo]
            total[0] += cpu_seconds(os.getpid()) - me
            total[1] += cpu_seconds(dev) - backend
            total[2] += 40
        task_workflow.FINAL_MEMO_LIMIT = 16 * 1024
        for in_memo, (me_s, dev_s, count, latencies) in totals.items():
            row(
                "finished task read by `tasks/get`",
                "view in memo" if in_memo else "view from the workflow result",
                f"get p50 {statistics.median(latencies):.2f} ms; CPU per task: "
                f"this process {me_s / count * 1000:.1f} ms, dev server "
                f"{dev_s / count * 1000:.1f} ms",
            )

        # 3. the argument validator, built per call vs once.
        component = await server.get_tool("echo")
        arguments = {"text": "x"}
        cold, warm = [], []
        for _ in range(4):
            started = time.process_time()
            for _ in range(200):
                creation._probe_for.cache_clear()
                creation.validate_arguments(component, arguments)
            cold.append((time.process_time() - started) / 200 * 1000)
            started = time.process_time()
            for _ in range(200):
                creation.validate_arguments(component, arguments)
            warm.append((time.process_time() - started) / 200 * 1000)
        row(
            "argument validation, CPU per create (ms)",
            "validator built per call",
            f"{statistics.median(cold):.3f}",
        )
        row(
            "argument validation, CPU per create (ms)",
            "validator built once",
            f"{statistics.median(warm):.3f}",
        )

        # 4. the sandbox with and without beartype passed through.
        modules = ("fastmcp", "fastmcp_tasks", "fastmcp_temporal", "mcp", "mcp_types", "docket")
        variants = (("without beartype", modules), ("with beartype", (*modules, "beartype")))
        for label, passthrough in variants:
            runner = SandboxedWorkflowRunner(
                restrictions=SandboxRestrictions.default.with_passthrough_modules(*passthrough)
            )
            queue = f"ab-{label.replace(' ', '-')}"
            async with Worker(
                engine.client,
                task_queue=queue,
                workflows=[EchoWorkflow],
                activities=[echo_activity],
                workflow_runner=runner,
            ):
                for i in range(3):  # warm up
                    await engine.client.execute_workflow(
                        EchoWorkflow.run, "x", id=f"{queue}-warm-{i}", task_queue=queue
                    )
                started = time.process_time()
                for i in range(20):
                    await engine.client.execute_workflow(
                        EchoWorkflow.run, "x", id=f"{queue}-{i}", task_queue=queue
                    )
                per_run = (time.process_time() - started) / 20 * 1000
            row("sandboxed workflow run, CPU of this process (ms)", label, f"{per_run:.1f}")

    print()
    print("| change | variant | measured |")
    print("|---|---|---|")
    print("\n".join(ROWS))


if __name__ == "__main__":
    asyncio.run(main())
