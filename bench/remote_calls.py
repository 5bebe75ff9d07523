"""Remote task calls from a workflow tool vs the same client calling the remote directly.

    .venv/bin/python bench/remote_calls.py --n 40 --fanouts 3 --out bench/results/remote_calls.md

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
  workflow task that makes the call to the one that gets the result
  (``workflow.now()``): the create activity, the wait activity (listening),
  and Temporal recording both.

Added latency = (workflow-tool call) - (direct call), per percentile. Fan-out:
50 calls at once (``asyncio.gather`` in the workflow; ``asyncio.gather`` of 50
direct listening calls), wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from fastmcp import Client, FastMCP
from fastmcp.utilities.tests import run_server_async
from mcp_http import McpHttp
from remote_call_workflow import TimedRemoteCalls

from fastmcp_temporal import DevServer, RemoteServer, TemporalTasks, workflow_tool
from fastmcp_temporal.client import TasksClientExtension, call_tool_task


def remote_server(temporal: str) -> FastMCP:
    mcp = FastMCP("remote")
    mcp.add_extension(TemporalTasks(address=temporal, task_queue="bench-remote", ui=False))

    @mcp.tool(task=True)
    async def quick(n: int) -> int:
        return n

    return mcp


def orchestrator(temporal: str, remote_url: str) -> FastMCP:
    mcp = FastMCP("orchestrator")
    mcp.add_extension(
        TemporalTasks(
            address=temporal,
            task_queue="bench-orchestrator",
            ui=False,
            remote_servers={"r": RemoteServer.http(remote_url)},
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
                        orchestrator(dev.address, url), extensions=[TasksClientExtension()]
                    ) as client,
                ):
                    http = McpHttp(url, pool)
                    for _ in range(3):  # warm both paths
                        await direct(http, 1)
                        await via_workflow(client, 1)
                    singles: dict[str, list[float]] = {"direct": [], "workflow": []}
                    for _ in range(n):
                        singles["direct"].append(await direct(http, 1))
                        singles["workflow"].append(await via_workflow(client, 1))
                    wide: dict[str, list[float]] = {"direct": [], "workflow": []}
                    for _ in range(fanouts):
                        wide["direct"].append(await direct(http, width))
                        wide["workflow"].append(await via_workflow(client, width))
        finally:
            dev.stop()
    return report(n, fanouts, width, singles, wide)


def report(
    n: int,
    fanouts: int,
    width: int,
    singles: dict[str, list[float]],
    wide: dict[str, list[float]],
) -> str:
    d, w = singles["direct"], singles["workflow"]

    def cells(values: list[float]) -> str:
        return f"{pct(values, 0.5):.1f} | {pct(values, 0.99):.1f} | {statistics.mean(values):.1f}"

    added_p50, added_p99 = pct(w, 0.5) - pct(d, 0.5), pct(w, 0.99) - pct(d, 0.99)
    added_mean = statistics.mean(w) - statistics.mean(d)
    rows = [
        f"# Remote task calls: from a workflow tool vs direct ({n} calls each, interleaved)",
        "",
        "```bash",
        "$ .venv/bin/python bench/remote_calls.py " + " ".join(sys.argv[1:]),
        "```",
        "",
        "| one remote task call (`quick`, returns at once) | p50 ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|",
        f"| direct: listening client | {cells(d)} |",
        f"| from a workflow tool (`remote().call_tool`) | {cells(w)} |",
        f"| **added** | **{added_p50:.1f}** | **{added_p99:.1f}** | {added_mean:.1f} |",
        "",
        f"| {width} calls at once (wall time, {fanouts} runs each) | median ms | ratio |",
        "|---|---:|---:|",
        f"| direct: {width} listening clients (`asyncio.gather`) | "
        f"{statistics.median(wide['direct']):.0f} | 1.00 |",
        f"| from a workflow tool (`asyncio.gather` of `call_tool`) | "
        f"{statistics.median(wide['workflow']):.0f} | "
        f"{statistics.median(wide['workflow']) / statistics.median(wide['direct']):.2f} |",
        "",
    ]
    return "\n".join(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--fanouts", type=int, default=3)
    parser.add_argument("--width", type=int, default=50)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    text = asyncio.run(main(args.n, args.fanouts, args.width))
    print(text)
    if args.out:
        args.out.write_text(text)
