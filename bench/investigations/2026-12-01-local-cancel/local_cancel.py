"""How soon a running local leg learns of ``tasks/cancel``, per workflow task timeout.

    .venv/bin/python bench/investigations/2026-12-01-local-cancel/local_cancel.py \\
        --rounds 20 --load-rounds 10 --n 200 \
        > bench/investigations/2026-12-01-local-cancel/results.md

A local leg (``ToolOptions(local_legs=True)``) runs inside a workflow task; the
worker sees new events (the cancel request) only when the SDK completes that
task to keep it open, at 80 % of the workflow task timeout. Rows, one server
each on the same dev server, for timeouts of 10 s (Temporal's default, what
local legs had before ``LOCAL_LEGS_TASK_TIMEOUT``), 5, 3, 2 and 1 s:

- **cancel**: a task whose tool sleeps 20 s in 50 ms steps is cancelled a
  random 0.5-2.5 s after its body started; measured from ``tasks/cancel``
  to the workflow closing (``tasks/get`` says ``cancelled`` from then) and to
  the body seeing ``CancelledError``. Every round runs one trial of every row
  at once (interleaved). Then rounds beside busy-looping processes (one per
  core: a saturated machine), and rounds where this process's event loop (the
  worker's, the client's) is blocked 500 ms of every 600 (a worker starved by
  CPU-bound code); each counts the workflow tasks that timed out.
- **history cost**: events of a task whose leg runs 10 s minus those of a 0 s
  one, per second of leg.
- **throughput**: a no-op local-leg task at the old (10 s) and the new
  (``LOCAL_LEGS_TASK_TIMEOUT``) timeout, round-robin as in ``leg_costs.py``
  (which row goes first alternates). ``--rounds 0 --load-rounds 0``: this alone.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/: support/, the benchmarks

import fastmcp_tasks  # noqa: F401  (the client half: declares the tasks extension)
from fastmcp import Client
from fastmcp.utilities.tasks import TaskConfig
from leg_costs import Row, mcp_task, measure
from support.servers import echo_server
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import ToolTask, call_tool_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.server.tasks.starter import LOCAL_LEGS_TASK_TIMEOUT, ToolOptions

TIMEOUTS_S = [10.0, 5.0, 3.0, 2.0, 1.0]
LEG_SECONDS = 20.0
HISTORY_LEG_SECONDS = 10.0
#: Set by the tool body: its leg started / it saw the cancel (perf_counter).
STARTED: dict[str, asyncio.Event] = {}
SAW_CANCEL: dict[str, float] = {}


@dataclass
class CancelRow:
    timeout_s: float
    client: Client
    extension: TemporalTasks
    to_closed: dict[str, list[float]] = field(default_factory=dict)
    to_body: dict[str, list[float]] = field(default_factory=dict)
    timed_out: Counter[str] = field(default_factory=Counter)
    not_cancelled: int = 0
    events_per_leg_second: float = 0.0

    def handle(self, task: ToolTask) -> WorkflowHandle[Any, Any]:
        engine = self.extension.engine
        workflow_id = workflow_id_for(task.task_id, None, engine.scope_secret)
        return engine.client.get_workflow_handle(workflow_id)


def sleeper_server(extension: TemporalTasks, name: str) -> Any:
    mcp = echo_server(extension, name, adaptive=True)

    @mcp.tool(task=TaskConfig(mode="required"))
    async def sleeper(trial: str, seconds: float) -> str:
        STARTED[trial].set()
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            SAW_CANCEL[trial] = time.perf_counter()
            raise
        return "slept"

    return mcp


async def events(handle: WorkflowHandle[Any, Any]) -> Counter[str]:
    return Counter(
        EventType.Name(event.event_type).removeprefix("EVENT_TYPE_").lower()
        for event in (await handle.fetch_history()).events
    )


async def run_leg(row: CancelRow, key: str, seconds: float) -> Counter[str]:
    STARTED[key] = asyncio.Event()
    task = await call_tool_task(row.client, "sleeper", {"trial": key, "seconds": seconds})
    handle = row.handle(task)
    await handle.result()
    return await events(handle)


async def history_cost(row: CancelRow) -> None:
    name = f"history-{row.timeout_s}"
    short, long = await asyncio.gather(
        run_leg(row, f"{name}-0", 0.0), run_leg(row, f"{name}-10", HISTORY_LEG_SECONDS)
    )
    row.events_per_leg_second = (sum(long.values()) - sum(short.values())) / HISTORY_LEG_SECONDS


async def cancel_trial(row: CancelRow, key: str, delay: float, phase: str) -> None:
    STARTED[key] = asyncio.Event()
    task = await call_tool_task(row.client, "sleeper", {"trial": key, "seconds": LEG_SECONDS})
    await asyncio.wait_for(STARTED[key].wait(), 60)
    await asyncio.sleep(delay)
    began = time.perf_counter()
    await task.cancel()
    handle = row.handle(task)
    with suppress(WorkflowFailureError):
        await handle.result()
    closed = time.perf_counter()
    give_up = time.monotonic() + 60  # the body's cancel may land after the workflow closed
    while key not in SAW_CANCEL and time.monotonic() < give_up:
        await asyncio.sleep(0.05)
    if (await task.status()).status != "cancelled" or key not in SAW_CANCEL:
        row.not_cancelled += 1
        return
    row.to_closed.setdefault(phase, []).append(closed - began)
    row.to_body.setdefault(phase, []).append(SAW_CANCEL[key] - began)
    row.timed_out[phase] += (await events(handle))["workflow_task_timed_out"]


def busy_loops() -> list[subprocess.Popen[bytes]]:
    """One busy-looping process per core: a saturated machine, like a crowded host."""
    code = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(os.cpu_count() or 1)]


async def lagging_loop(block_s: float = 0.5, free_s: float = 0.1) -> None:
    """Hold the event loop ``block_s`` of every ``block_s + free_s`` seconds."""
    while True:
        until = time.monotonic() + block_s
        while time.monotonic() < until:
            pass
        await asyncio.sleep(free_s)


async def cancel_rounds(rows: list[CancelRow], rounds: int, phase: str, rng: random.Random) -> None:
    for round_number in range(rounds):
        await asyncio.gather(
            *(
                cancel_trial(
                    row, f"{phase}-{row.timeout_s}-{round_number}", rng.uniform(0.5, 2.5), phase
                )
                for row in rows
            )
        )


async def main(rounds: int, load_rounds: int, n: int, concurrencies: list[int]) -> None:
    # The SDK core warns (on stdout) about every workflow task open longer than
    # 5 s, i.e. every 10 s row's leg: results only here.
    quiet = TelemetryFilter(core_level="ERROR", other_level="ERROR")
    Runtime.set_default(Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=quiet))))
    rng = random.Random(15)
    async with AsyncExitStack() as stack:
        data_dir = tempfile.mkdtemp(prefix="bench-local-cancel-")
        rows: list[CancelRow] = []
        for timeout_s in TIMEOUTS_S:
            options = ToolOptions(
                local_legs=True, workflow_task_timeout=timedelta(seconds=timeout_s)
            )
            extension = TemporalTasks(
                data_dir=data_dir, ui=False, tools={"sleeper": options, "echo": options}
            )
            server = sleeper_server(extension, f"local-cancel-{len(rows)}")
            client = await stack.enter_async_context(Client(server))
            rows.append(CancelRow(timeout_s, client, extension))
        dev_server = rows[0].extension.dev_server
        assert dev_server is not None
        backend_pid = dev_server.temporal_pid
        await asyncio.gather(*(history_cost(row) for row in rows))
        await cancel_rounds(rows, rounds, "idle", rng)
        hogs = busy_loops()
        try:
            await cancel_rounds(rows, load_rounds, "busy", rng)
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
        lag = asyncio.create_task(lagging_loop())
        try:
            await cancel_rounds(rows, load_rounds, "lagging loop", rng)
        finally:
            lag.cancel()
        by_timeout = {row.timeout_s: row for row in rows}
        new_s = LOCAL_LEGS_TASK_TIMEOUT.total_seconds()
        throughput_rows = [
            Row(
                f"local legs, {t:g} s workflow task timeout",
                mcp_task(by_timeout[t].client, by_timeout[t].extension, "echo"),
            )
            for t in (10.0, new_s)
        ]
        for row in throughput_rows:  # warm-up
            for i in range(10):
                await row.run_one(i)
        results: dict[int, list[Row]] = {}
        for concurrency in concurrencies:
            measured = [Row(row.name, row.run_one) for row in throughput_rows]
            for round_number in range(8):
                share = n // 8 + (1 if round_number < n % 8 else 0)
                # Alternate which row goes first, so neither always runs warmer.
                for row in measured if round_number % 2 == 0 else measured[::-1]:
                    await measure(row, share, concurrency, backend_pid)
            results[concurrency] = measured
    print_results(rows, results, rounds, load_rounds, n)


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def print_results(
    rows: list[CancelRow], results: dict[int, list[Row]], rounds: int, load_rounds: int, n: int
) -> None:
    print(
        f"Cancel: {rounds} rounds on an otherwise idle bench, then {load_rounds} beside "
        f"{os.cpu_count()} busy-looping processes (busy), then {load_rounds} with this process's "
        "event loop blocked 500 ms of every 600 (lagging loop); in every round one trial per "
        "row at once, "
        "cancelled a random 0.5-2.5 s after the body started. Times in ms from `tasks/cancel`; "
        "with this few trials p99 is the maximum."
    )
    print()
    print(
        "| workflow task timeout | machine | trials | cancel -> `cancelled` p50 / p99 | "
        "cancel -> body saw `CancelledError` p50 / p99 | mean | workflow tasks timed out | "
        "history events per leg-second |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for phase in ("idle", "busy", "lagging loop"):
        for row in rows:
            closed, body = row.to_closed.get(phase, []), row.to_body.get(phase, [])
            if not closed:
                continue
            print(
                f"| {row.timeout_s:g} s | {phase} | {len(closed)} | "
                f"{p(closed, 0.5):.0f} / {p(closed, 0.99):.0f} | "
                f"{p(body, 0.5):.0f} / {p(body, 0.99):.0f} | {statistics.mean(body) * 1000:.0f} | "
                f"{row.timed_out[phase]} | {row.events_per_leg_second:.2f} |"
            )
    failed = sum(row.not_cancelled for row in rows)
    print()
    print(f"Trials that did not end `cancelled` with the body cancelled: {failed}")
    print()
    print(
        f"Throughput: n = {n} no-op tasks per row and concurrency, 8 interleaved rounds, each "
        "waited on with a long poll on its workflow; CPU in ms per task"
    )
    print()
    print("| row | concurrency | tasks/s | CPU this process | CPU dev server |")
    print("|---|---|---|---|---|")
    for concurrency, measured in results.items():
        for row in measured:
            print(
                f"| {row.name} | {concurrency} | {row.done / row.elapsed:.1f} | "
                f"{row.cpu_me / row.done * 1000:.1f} | {row.cpu_backend / row.done * 1000:.1f} |"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--load-rounds", type=int, default=10)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 20])
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.load_rounds, args.n, args.concurrency))
