"""Where a remote task call's time goes: its workflow's history, step by step.

    .venv/bin/python bench/investigations/2026-12-01-remote-call-timeline/remote_call_timeline.py \\
        --n 40 \
        --out bench/investigations/2026-12-01-remote-call-timeline/results.md

The same setup as ``bench/remote_calls.py`` (the remote behind real HTTP, an
orchestrating server with eager activities, one embedded dev server, one
process), interleaved with the same direct listening client. Each workflow
call's history event times (recorded by the Temporal server) split its time:
the first workflow task (the SDK activating the workflow and the server
recording its completion, which hands the create activity back eagerly), the
create activity (the ``tools/call`` round trip, its completion), the server
dispatching the next workflow task, and that workflow task (the local first
wait inside it). ``workflow.now()`` stops at the local wait's completion, a
little before that workflow task's completion is recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/: support/, the benchmarks
import httpx
from fastmcp import Client
from fastmcp.utilities.tests import run_server_async
from remote_calls import direct, orchestrator, remote_server, via_workflow
from support.mcp_http import McpHttp
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowHistory

from fastmcp_temporal import DevServer
from fastmcp_temporal.client import TasksClientExtension

FOLDER = f"bench/investigations/{Path(__file__).resolve().parent.name}"

STEPS = (
    "first workflow task: started -> completed (create scheduled, started eagerly)",
    "create activity: started -> completed",
    "create completed -> next workflow task started",
    "next workflow task: started -> completed (the local first wait inside)",
)


def steps(history: WorkflowHistory) -> list[float] | None:
    """The ``STEPS`` of one single-call workflow, in ms (``None``: not that shape)."""

    def at(kind: EventType.ValueType) -> list[float]:
        return [
            e.event_time.ToDatetime().timestamp() * 1000
            for e in history.events
            if e.event_type == kind
        ]

    started = at(EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED)
    completed = at(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
    create_started = at(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    create_completed = at(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
    if len(create_started) != 1 or len(create_completed) != 1 or len(started) < 2:
        return None  # the first wait did not settle it (a wait activity ran)
    second = next(t for t in started if t >= create_completed[0])
    second_done = next(t for t in completed if t >= second)
    return [
        completed[0] - started[0],
        create_completed[0] - create_started[0],
        second - create_completed[0],
        second_done - second,
    ]


async def main(n: int) -> str:
    with tempfile.TemporaryDirectory(prefix="bench-timeline-") as data_dir:
        dev = await DevServer.start(data_dir=Path(data_dir), ui=False)
        try:
            async with (
                run_server_async(remote_server(dev.address)) as url,
                httpx.AsyncClient(timeout=60) as pool,
                Client(
                    orchestrator(dev.address, url, eager=True),
                    extensions=[TasksClientExtension()],
                ) as eager,
            ):
                http = McpHttp(url, pool)
                for _ in range(3):  # warm every path
                    await direct(http, 1)
                    await via_workflow(eager, 1)
                since = datetime.now().astimezone().isoformat()
                directs, workflows = [], []
                for _ in range(n):
                    directs.append(await direct(http, 1))
                    workflows.append(await via_workflow(eager, 1))
                temporal = await TemporalClient.connect(dev.address)
                query = f"WorkflowType='TimedRemoteCalls' AND StartTime > '{since}'"
                split = []
                async for execution in temporal.list_workflows(query):
                    handle = temporal.get_workflow_handle(execution.id)
                    if (shape := steps(await handle.fetch_history())) is not None:
                        split.append(shape)
        finally:
            dev.stop()
    return report(n, directs, workflows, split)


def report(n: int, directs: list[float], workflows: list[float], split: list[list[float]]) -> str:
    load = " / ".join(f"{value:.2f}" for value in os.getloadavg())
    rows = [
        f"# Where a remote task call's time goes ({n} calls, interleaved with direct ones)",
        "",
        "```bash",
        f"$ .venv/bin/python {FOLDER}/remote_call_timeline.py " + " ".join(sys.argv[1:]),
        "```",
        "",
        f"Load average (1/5/15 min) when the run ended: {load} (2 cores, shared).",
        "",
        "| | p50 ms | mean ms |",
        "|---|---:|---:|",
        f"| direct: listening client | {statistics.median(directs):.1f} | "
        f"{statistics.mean(directs):.1f} |",
        f"| from a workflow tool, eager (`workflow.now()`) | {statistics.median(workflows):.1f} | "
        f"{statistics.mean(workflows):.1f} |",
        *(
            f"| history ({len(split)} calls): {label} | "
            f"{statistics.median(s[i] for s in split):.1f} | "
            f"{statistics.mean(s[i] for s in split):.1f} |"
            for i, label in enumerate(STEPS)
        ),
        "",
    ]
    return "\n".join(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    text = asyncio.run(main(args.n))
    print(text)
    if args.out:
        args.out.write_text(text)
