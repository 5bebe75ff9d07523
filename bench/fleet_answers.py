"""How soon an answer or a cancel takes effect when it reaches another front end.

Two front ends (``tests.processes.session_server``: one scope secret, no worker)
behind the round-robin proxy of the fleet tests (``tests.processes.round_robin_proxy``),
the legs in a worker of this process, one embedded Temporal. A raw 2025-06-18 client
(as Codex speaks it) makes a durable plain call held by front end 0; the proxy is
steered so that the answer (or the cancel) reaches front end 0 itself ("same") or
front end 1 ("other"); rows interleave, one call at a time:

- **answer**: its POST sent -> the call's result on its stream (the task's second leg
  runs between: the same for both rows);
- **cancel**: its POST sent -> the cancel recorded in the task's history (polled
  every 10 ms), -> the workflow closed as cancelled (once the running leg has heard
  it at a heartbeat: the worker sends one at most every second, as the embedded
  worker does), and for "other" -> the held call's end on its stream.

    .venv/bin/python bench/fleet_answers.py --n 20 --out bench/results/fleet_answers.md
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' fleet

from support.smoke import parse_args
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.worker import Worker

from fastmcp_temporal import McpTasksPlugin
from fastmcp_temporal.server.protocol.live_calls import LiveCalls
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.testing import shared_temporal
from tests.fleet import SECRET, Fleet, RawSession, running_fleet
from tests.processes.session_server import tools

_CANCEL_REQUESTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED


def asks(frame: dict[str, Any]) -> bool:
    return frame.get("method") == "elicitation/create"


async def answer_once(fleet: Fleet, target: int) -> float:
    client = RawSession(fleet.http, fleet.url)
    try:
        await client.initialize()
        await fleet.steer(0)
        call = await client.call("tools/call", {"name": "confirm", "arguments": {"item": "x"}})
        question = await call.frame(asks)
        await fleet.steer(target)
        began = time.perf_counter()
        reply = {"action": "accept", "content": {"note": "ok"}}
        await client.post({"jsonrpc": "2.0", "id": question["id"], "result": reply})
        await call.result()
        return time.perf_counter() - began
    finally:
        await client.aclose()


async def cancel_once(
    fleet: Fleet, temporal: TemporalClient, target: int, marker: Path, calls: LiveCalls
) -> tuple[float, float, float | None]:
    client = RawSession(fleet.http, fleet.url)
    marker.unlink(missing_ok=True)
    try:
        await client.initialize()
        await fleet.steer(0)
        lingering = {"name": "linger", "arguments": {"marker": str(marker)}}
        call = await client.call("tools/call", lingering)
        while not marker.exists():
            await asyncio.sleep(0.02)
        assert client.session_id is not None
        task_id = calls.call_task_id(client.session_id, None, str(call.request_id))
        handle = temporal.get_workflow_handle(workflow_id_for(task_id, None, SECRET.encode()))
        await fleet.steer(target)
        began = time.perf_counter()
        cancel = {"requestId": call.request_id, "reason": "bench"}
        await client.post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        while not await _cancel_requested(handle):
            await asyncio.sleep(0.01)
        requested = time.perf_counter() - began
        while (await handle.describe()).status != WorkflowExecutionStatus.CANCELED:
            await asyncio.sleep(0.01)
        closed = time.perf_counter() - began
        ended = None
        if target != 0:  # the call held by front end 0 answers once its task has ended
            await call.result()
            ended = time.perf_counter() - began
        return requested, closed, ended
    finally:
        await client.aclose()


async def _cancel_requested(handle: WorkflowHandle[Any, Any]) -> bool:
    history = await handle.fetch_history()
    return any(event.event_type == _CANCEL_REQUESTED for event in history.events)


def row(samples: list[float]) -> str:
    ms = sorted(1000 * sample for sample in samples)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return f"{statistics.median(ms):.0f} | {p95:.0f} | {ms[-1]:.0f}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20, help="calls per row")
    parser.add_argument("--out", type=Path, help="write the report here (else stdout)")
    args = parse_args(parser, n=2, out=None)
    calls = LiveCalls()
    calls.keyed(SECRET.encode())
    answers: dict[int, list[float]] = {0: [], 1: []}
    requests: dict[int, list[float]] = {0: [], 1: []}
    closes: dict[int, list[float]] = {0: [], 1: []}
    call_ends: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        async with shared_temporal(root / "temporal", ui=False) as server:
            temporal = await TemporalClient.connect(server.address)
            queue = "fleet-answers-bench"
            async with (
                Worker(
                    temporal,
                    task_queue=queue,
                    plugins=[McpTasksPlugin(tools)],
                    max_heartbeat_throttle_interval=timedelta(seconds=1),
                ),
                running_fleet(server.address, queue, root) as fleet,
            ):
                for index in range(args.n):
                    for target in (0, 1) if index % 2 == 0 else (1, 0):
                        answers[target].append(await answer_once(fleet, target))
                        requested, closed, ended = await cancel_once(
                            fleet, temporal, target, root / "marker", calls
                        )
                        requests[target].append(requested)
                        closes[target].append(closed)
                        if ended is not None:
                            call_ends.append(ended)
    report = [
        "# An answer or a cancel that reaches another front end",
        "",
        f"`.venv/bin/python bench/fleet_answers.py --n {args.n}` on "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; two front ends behind a round-robin proxy, "
        "the call held by front end 0, one call at a time, rows interleaved.",
        "",
        "| what | reaches | p50 ms | p95 ms | max ms | other / same (p50) |",
        "|---|---|---|---|---|---|",
        f"| answer -> call's result | same front end | {row(answers[0])} | |",
        f"| answer -> call's result | other front end | {row(answers[1])} | "
        f"{statistics.median(answers[1]) / statistics.median(answers[0]):.2f}x |",
        f"| cancel -> recorded in the task | same front end | {row(requests[0])} | |",
        f"| cancel -> recorded in the task | other front end | {row(requests[1])} | "
        f"{statistics.median(requests[1]) / statistics.median(requests[0]):.2f}x |",
        f"| cancel -> task cancelled | same front end | {row(closes[0])} | |",
        f"| cancel -> task cancelled | other front end | {row(closes[1])} | "
        f"{statistics.median(closes[1]) / statistics.median(closes[0]):.2f}x |",
        f"| cancel -> held call ends | other front end | {row(call_ends)} | |",
        "",
    ]
    text = "\n".join(report)
    if args.out is None:
        print(text)
    else:
        args.out.write_text(text)


if __name__ == "__main__":
    asyncio.run(main())
