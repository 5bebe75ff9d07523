"""Many tasks parked in ``input_required``: memory, and ``tasks/get`` on evicted tasks.

    .venv/bin/python bench/parked.py --n 10000

Parks ``--n`` tasks (embedded default, in-process worker with Temporal's default
cache of 1000 workflows, so most of them are evicted), then reports the RSS of
this process (MCP server + worker + client) and of the dev server, and the
latency of ``tasks/get`` on a random sample of the parked tasks. A parked task
holds no worker slot, and ``tasks/get`` answers it from ``describe`` (memo), so
an evicted task needs no replay.
"""

from __future__ import annotations

import argparse
import asyncio
import random
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

QUESTION = mcp_types.InputRequiredResult(
    input_requests={
        "go": mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(
                message="Go?", requested_schema={"type": "object", "properties": {}}
            )
        )
    }
)


def rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def main(n: int, concurrency: int, sample: int, settle_s: float) -> None:
    extension = TemporalTasks(
        data_dir=tempfile.mkdtemp(prefix="bench-parked-"), ui=False, ttl_ms=3_600_000
    )
    mcp = FastMCP("parked")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def guarded(ctx: Context) -> str:
        return QUESTION if not ctx.input_responses else "done"  # type: ignore[return-value]

    async with Client(mcp) as client:
        rss_before = rss_mb()
        ids: list[object] = []
        queue = iter(range(n))
        began = time.perf_counter()

        async def park() -> None:
            for _ in queue:
                task = await call_tool_task(client, "guarded", {})
                await task.wait(state="input_required", timeout=600)
                ids.append(task)

        await asyncio.gather(*(park() for _ in range(concurrency)))
        parked_s = time.perf_counter() - began
        await asyncio.sleep(settle_s)  # let the worker settle (cache, GC)
        assert extension.dev_server is not None
        rss_after, rss_server = rss_mb(), rss_mb(extension.dev_server.temporal_pid)
        latencies = []
        for task in random.sample(ids, min(sample, len(ids))):
            start = time.perf_counter()
            view = await task.status()  # type: ignore[attr-defined]
            latencies.append((time.perf_counter() - start) * 1000)
            assert view.status == "input_required"
    ordered = sorted(latencies)
    print(
        f"| parked tasks | {len(ids)} (parked in {parked_s:.0f} s, {len(ids) / parked_s:.1f}/s) |"
    )
    print(
        f"| this process RSS (server + worker + client) | {rss_before:.0f} → {rss_after:.0f} MB |"
    )
    print(f"| dev server RSS | {rss_server:.0f} MB |")
    p99 = ordered[int(len(ordered) * 0.99) - 1]
    print(
        f"| `tasks/get` on random parked tasks (n={len(ordered)}) | "
        f"p50 {statistics.median(ordered):.1f} ms, p99 {p99:.1f} ms |"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--settle-s", type=float, default=5.0, help="idle before the reads")
    args = parse_args(parser, n=5, concurrency=2, sample=3, settle_s=0.0)
    asyncio.run(main(args.n, args.concurrency, args.sample, args.settle_s))
