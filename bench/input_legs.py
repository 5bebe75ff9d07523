"""Input legs: ``tasks/update`` → next leg latency, and worker shutdown with parked tasks.

    .venv/bin/python bench/input_legs.py --n 100 --parked 200

Embedded default (dev server on a fresh SQLite file, in-process worker),
FastMCP ``Client`` over the in-memory transport. The update→leg latency is
measured from just before the ``tasks/update`` call until the second leg's body
starts (a timestamp the body records), one task at a time; a ``tasks/get``
sent right after each ``tasks/update`` is timed too (the one read that asks the
workflow itself, so the answer it reports is already gone). Shutdown is the
time to leave the server's lifespan (worker drain included) with ``--parked``
tasks waiting for input.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import fastmcp_tasks  # noqa: F401
import mcp_types
from fastmcp import Client, Context, FastMCP
from fastmcp_tasks import call_tool_task
from support.smoke import parse_args

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import update_task

QUESTION = mcp_types.InputRequiredResult(
    input_requests={
        "go": mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(
                message="Go?", requested_schema={"type": "object", "properties": {}}
            )
        )
    }
)


def build(data_dir: Path, second_leg_started: dict[str, float]) -> FastMCP:
    mcp = FastMCP("bench-input")
    mcp.add_extension(TemporalTasks(data_dir=data_dir, ui=False))

    @mcp.tool(task=True)
    async def guarded(ctx: Context) -> str:
        if not ctx.input_responses:
            return QUESTION  # type: ignore[return-value]
        second_leg_started[ctx.task_id or ""] = time.perf_counter()
        return "done"

    return mcp


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def main(n: int, parked: int) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="fastmcp-temporal-bench-"))
    started: dict[str, float] = {}
    mcp = build(data_dir, started)
    latencies: list[float] = []
    get_after_update: list[float] = []
    client = Client(mcp)
    async with client:
        for _ in range(n):
            task = await call_tool_task(client, "guarded", {})
            parked_view = await task.wait(state="input_required", timeout=60)
            (key,) = parked_view.input_requests
            sent = time.perf_counter()
            await update_task(client.session, task.task_id, {key: {"action": "accept"}})
            polled = time.perf_counter()
            await task.status()  # the answer is being applied: served by the workflow's query
            get_after_update.append((time.perf_counter() - polled) * 1000)
            await task.wait(timeout=60)
            latencies.append((started[task.task_id] - sent) * 1000)
        waiting = await asyncio.gather(
            *(call_tool_task(client, "guarded", {}) for _ in range(parked))
        )
        await asyncio.gather(*(t.wait(state="input_required", timeout=120) for t in waiting))
        leaving = time.perf_counter()
    shutdown_s = time.perf_counter() - leaving
    print("| measure | n | p50 | p99 |")
    print("|---|---|---|---|")
    print(
        f"| `tasks/update` → next leg running (ms) | {n} | "
        f"{statistics.median(latencies):.1f} | {percentile(latencies, 0.99):.1f} |"
    )
    print(
        f"| `tasks/get` right after `tasks/update` (ms) | {n} | "
        f"{statistics.median(get_after_update):.1f} | {percentile(get_after_update, 0.99):.1f} |"
    )
    print(f"| server shutdown with {parked} parked tasks (s) | 1 | {shutdown_s:.2f} | |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--parked", type=int, default=200)
    args = parse_args(parser, n=2, parked=3)
    asyncio.run(main(args.n, args.parked))
