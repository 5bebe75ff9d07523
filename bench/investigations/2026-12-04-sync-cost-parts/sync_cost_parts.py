"""What each thing a task writes costs Temporal: raw temporalio, one part added at a time.

    .venv/bin/python bench/investigations/2026-12-04-sync-cost-parts/sync_cost_parts.py \\
        --n 300 --concurrency 20

A durable synchronous call of a short tool does, on Temporal's side, what a
bare eager start + local activity + ``result()`` does, plus: a start that
carries the task's search attributes, memo, Web UI summary/details and
timeouts; the status search attribute and the final memo upserted when the
task ends; ``workflow.patched`` markers (three for a new short-tool task); and
a wait that reads the history twice (its first page, then a long poll for the
next events) where ``result()`` reads it once, for the close event. This
script measures each part on its own, and all of them together, as plain
temporalio workflows on the embedded dev server (same flags, SQLite file) --
no MCP, no HTTP -- so the part's CPU (this process: client and worker; the dev
server) is the difference to the bare row. Rows are interleaved round by round.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.common import (
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from fastmcp_temporal.server.embedded.devserver import DevServer

TICKS = os.sysconf("SC_CLK_TCK")
STATUS = SearchAttributeKey.for_keyword("McpTaskStatus")
TOOL = SearchAttributeKey.for_keyword("McpToolName")
QUEUE = "cost-parts"
VIEW = {"taskId": "x" * 36, "status": "completed", "ttlMs": 60000, "pollIntervalMs": 1000}


@activity.defn
async def leg(text: str) -> str:
    return text


@dataclass
class Shape:
    status: bool = False
    memo: bool = False
    markers: int = 0


@workflow.defn(sandboxed=False)
class PartsWorkflow:
    @workflow.run
    async def run(self, shape: Shape) -> dict:
        for i in range(shape.markers):
            workflow.patched(f"cost-parts/patch-{i}")
        result = await workflow.execute_local_activity(
            leg, "x", start_to_close_timeout=timedelta(seconds=30)
        )
        if shape.status:
            workflow.upsert_search_attributes([STATUS.value_set("completed")])
        if shape.memo:
            workflow.upsert_memo({"mcp": {**VIEW, "result": {"content": [result]}}})
        return VIEW


@dataclass
class Row:
    name: str
    shape: Shape
    start_extras: bool = False
    two_reads: bool = False
    e2e: list[float] = field(default_factory=list)
    elapsed: float = 0.0
    cpu_me: float = 0.0
    cpu_server: float = 0.0


def cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


async def two_reads(client: Client, workflow_id: str) -> None:
    """The task wait's reads: the history's first page, then long polls until the close."""
    token = b""
    while True:
        request = GetWorkflowExecutionHistoryRequest(
            namespace=client.namespace,
            execution=WorkflowExecution(workflow_id=workflow_id),
            next_page_token=token,
            wait_new_event=True,
            skip_archival=True,
        )
        response = await client.workflow_service.get_workflow_execution_history(request)
        token = response.next_page_token
        if not token:
            return


def one_call(client: Client, row: Row) -> Callable[[int], Awaitable[None]]:
    async def call(i: int) -> None:
        workflow_id = f"{row.name}-{i}-{time.time_ns()}"
        options: dict = {}
        if row.start_extras:
            options = dict(
                memo={"mcp": {k: v for k, v in VIEW.items() if k != "status"}},
                search_attributes=TypedSearchAttributes(
                    [SearchAttributePair(TOOL, "echo"), SearchAttributePair(STATUS, "working")]
                ),
                static_summary="**echo** · text=x",
                static_details="task " + "x" * 36 + " · created now · ttl 60000 ms",
                execution_timeout=timedelta(minutes=2),
                task_timeout=timedelta(seconds=2),
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            )
        handle: WorkflowHandle = await client.start_workflow(
            PartsWorkflow.run,
            row.shape,
            id=workflow_id,
            task_queue=QUEUE,
            request_eager_start=True,
            **options,
        )
        if row.two_reads:
            await two_reads(client, workflow_id)
        else:
            await handle.result()

    return call


async def measure(client: Client, row: Row, n: int, concurrency: int, server_pid: int) -> None:
    call = one_call(client, row)
    queue = iter(range(n))
    me0, server0, t0 = cpu(os.getpid()), cpu(server_pid), time.perf_counter()

    async def worker() -> None:
        for i in queue:
            started = time.perf_counter()
            await call(i)
            row.e2e.append((time.perf_counter() - started) * 1000)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    row.elapsed += time.perf_counter() - t0
    row.cpu_me += cpu(os.getpid()) - me0
    row.cpu_server += cpu(server_pid) - server0


async def main(n: int, concurrency: int, rounds: int) -> None:
    rows = [
        Row("bare: eager start + local activity + result()", Shape()),
        Row("+ the task's start (search attributes, memo, summary, timeouts)", Shape(), True),
        Row("+ status search attribute upserted at the end", Shape(status=True)),
        Row("+ final memo upserted", Shape(memo=True)),
        Row("+ both upserts", Shape(status=True, memo=True)),
        Row("+ 1 patch marker", Shape(markers=1)),
        Row("+ 3 patch markers", Shape(markers=3)),
        Row("+ 1 patch marker + both upserts", Shape(True, True, 1)),
        Row("+ 3 patch markers + both upserts", Shape(True, True, 3)),
        Row("+ the wait's two history reads instead of result()", Shape(), two_reads=True),
        Row("all of the above but 1 marker", Shape(True, True, 1), True, True),
        Row("all of the above (the task's shape)", Shape(True, True, 3), True, True),
    ]
    server = await DevServer.start(data_dir=Path(tempfile.mkdtemp(prefix="cost-parts-")), ui=False)
    try:
        client = await Client.connect(server.address)
        async with Worker(
            client,
            task_queue=QUEUE,
            workflows=[PartsWorkflow],
            activities=[leg],
            workflow_runner=UnsandboxedWorkflowRunner(),
        ):
            for row in rows:  # warm-up: pollers, caches
                await measure(client, row, 20, concurrency, server.process.pid)
                row.e2e, row.elapsed, row.cpu_me, row.cpu_server = [], 0.0, 0.0, 0.0
            share = n // rounds
            for _ in range(rounds):
                for row in rows:
                    await measure(client, row, share, concurrency, server.process.pid)
    finally:
        server.stop()
    print(
        f"n = {n // rounds * rounds} calls per row in {rounds} interleaved rounds, "
        f"concurrency {concurrency}; CPU in ms per call"
    )
    print()
    print("| row | calls/s | p50 ms | CPU this process | CPU dev server | CPU total | vs bare |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    bare = None
    for row in rows:
        done = len(row.e2e)
        me, srv = row.cpu_me / done * 1000, row.cpu_server / done * 1000
        bare = bare if bare is not None else me + srv
        print(
            f"| {row.name} | {done / row.elapsed:.1f} | {statistics.median(row.e2e):.1f} | "
            f"{me:.1f} | {srv:.1f} | {me + srv:.1f} | {me + srv - bare:+.1f} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.concurrency, args.rounds))
