"""Remote task calls from a workflow tool vs the same client calling the remote directly.

    .venv/bin/python bench/remote_calls.py --n 30 --fanouts 3 --width 50 \
        --out bench/results/remote_calls.md

The remote is fastmcp-temporal (``TemporalTasks`` on an embedded dev server,
in-process worker) behind real streamable HTTP, serving ``quick``: a task tool
that returns at once, so a call's time is all protocol and engine. Two ways
to call it, interleaved sample by sample so a slow spell of the shared
machine hits both:

- **direct**: a listening client (raw JSON-RPC over ``httpx``):
  ``tools/call``, then ``subscriptions/listen`` until the frame that says
  ``completed`` -- what our wait activity does;
- **from a workflow tool**: ``remote("r").call_tool("quick")`` inside a
  workflow, on a second ``TemporalTasks`` server (same dev server, its own
  queue and worker). Its time is measured by the workflow itself, from the
  workflow task that makes the call to the moment it has the result
  (``workflow.now()``, which a local activity's completion moves on): the
  create activity, Temporal recording it, and the first wait -- a local
  activity (listening) in the workflow task after it.

Added latency = (workflow-tool call) - (direct call), per percentile. Fan-out:
50 calls at once (``asyncio.gather`` in the workflow; ``asyncio.gather`` of 50
direct listening calls), wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from fastmcp import Client, FastMCP
from fastmcp.utilities.tests import run_server_async
from support.mcp_http import McpHttp
from support.remote_call_workflow import TimedRemoteCalls
from support.smoke import parse_args

from fastmcp_temporal import DevServer, RemoteServer, TemporalTasks, workflow_tool
from fastmcp_temporal.client import TasksClientExtension, call_tool_task


def remote_server(temporal: str) -> FastMCP:
    mcp = FastMCP("remote")
    mcp.add_extension(TemporalTasks(address=temporal, task_queue="bench-remote", ui=False))

    @mcp.tool(task=True)
    async def quick(n: int) -> int:
        return n

    return mcp


def orchestrator(temporal: str, remote_url: str, *, eager: bool) -> FastMCP:
    """The workflow tool's server; ``eager=False``: its worker opts out of eager activities."""
    mcp = FastMCP("orchestrator")
    mcp.add_extension(
        TemporalTasks(
            address=temporal,
            task_queue=f"bench-orchestrator-{'eager' if eager else 'matched'}",
            ui=False,
            remote_servers={"r": RemoteServer.http(remote_url)},
            worker_options={"disable_eager_activity_execution": not eager},
        )
    )
    mcp.add_tool(workflow_tool(TimedRemoteCalls))
    return mcp


async def direct(http: McpHttp, count: int) -> float:
    async def one(i: int) -> None:
        created = await http.result("tools/call", {"name": "quick", "arguments": {"n": i}})
        await http.listen_until_finished(created["taskId"])

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(count)))
    return (time.perf_counter() - started) * 1000


async def via_workflow(client: Client, count: int) -> float:
    task = await call_tool_task(client, "timed_remote_calls", {"count": count})
    final = await task.wait(timeout=300)
    assert final.status == "completed" and final.result is not None, final
    return float(final.result["structuredContent"]["result"])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main(n: int, fanouts: int, width: int) -> str:
    with tempfile.TemporaryDirectory(prefix="bench-remote-") as data_dir:
        dev = await DevServer.start(data_dir=Path(data_dir), ui=False)
        try:
            async with run_server_async(remote_server(dev.address)) as url:
                limits = httpx.Limits(max_connections=200)
                async with (
                    httpx.AsyncClient(timeout=60, limits=limits) as pool,
                    Client(
                        orchestrator(dev.address, url, eager=False),
                        extensions=[TasksClientExtension()],
                    ) as matched,
                    Client(
                        orchestrator(dev.address, url, eager=True),
                        extensions=[TasksClientExtension()],
                    ) as eager,
                ):
                    http = McpHttp(url, pool)
                    for _ in range(3):  # warm every path
                        await direct(http, 1)
                        await via_workflow(matched, 1)
                        await via_workflow(eager, 1)
                    singles: dict[str, list[float]] = {key: [] for key in ROWS}
                    for _ in range(n):
                        singles["direct"].append(await direct(http, 1))
                        singles["matched"].append(await via_workflow(matched, 1))
                        singles["eager"].append(await via_workflow(eager, 1))
                    wide: dict[str, list[float]] = {key: [] for key in ROWS}
                    for _ in range(fanouts):
                        wide["direct"].append(await direct(http, width))
                        wide["matched"].append(await via_workflow(matched, width))
                        wide["eager"].append(await via_workflow(eager, width))
        finally:
            dev.stop()
    return report(n, fanouts, width, singles, wide)


ROWS = {
    "direct": "direct: listening client",
    "matched": "from a workflow tool, activities dispatched by matching",
    "eager": "from a workflow tool, eager activities",
}


def report(
    n: int,
    fanouts: int,
    width: int,
    singles: dict[str, list[float]],
    wide: dict[str, list[float]],
) -> str:
    d = singles["direct"]

    def cells(values: list[float]) -> str:
        return f"{pct(values, 0.5):.1f} | {pct(values, 0.99):.1f} | {statistics.mean(values):.1f}"

    def added(values: list[float]) -> str:
        p50, p99 = pct(values, 0.5) - pct(d, 0.5), pct(values, 0.99) - pct(d, 0.99)
        return f"**{p50:.1f}** | {p99:.1f} | {statistics.mean(values) - statistics.mean(d):.1f}"

    load = " / ".join(f"{value:.2f}" for value in os.getloadavg())
    rows = [
        f"# Remote task calls: from a workflow tool vs direct ({n} calls each, interleaved)",
        "",
        "```bash",
        "$ .venv/bin/python bench/remote_calls.py " + " ".join(sys.argv[1:]),
        "```",
        "",
        f"Load average (1/5/15 min) when the run ended: {load} (2 cores, shared).",
        "",
        "| one remote task call (`quick`, returns at once) | p50 ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|",
        *(f"| {label} | {cells(singles[key])} |" for key, label in ROWS.items()),
        f"| **added**, matching | {added(singles['matched'])} |",
        f"| **added**, eager | {added(singles['eager'])} |",
        "",
        f"| {width} calls at once (wall time, {fanouts} runs each) | median ms | ratio |",
        "|---|---:|---:|",
        *(
            f"| {label} | {statistics.median(wide[key]):.0f} | "
            f"{statistics.median(wide[key]) / statistics.median(wide['direct']):.2f} |"
            for key, label in ROWS.items()
        ),
        "",
    ]
    return "\n".join(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--fanouts", type=int, default=3)
    parser.add_argument("--width", type=int, default=50)
    parser.add_argument("--out", type=Path)
    args = parse_args(parser, n=2, fanouts=1, width=3, out=None)
    text = asyncio.run(main(args.n, args.fanouts, args.width))
    print(text)
    if args.out:
        args.out.write_text(text)
