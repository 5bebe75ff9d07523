"""Which of the dev server's queue-reader rate limits cost latency: transfer, timer, visibility.

Raw ``temporalio`` only. Per variant, a fresh dev server started as the embedded one
is (SQLite file, WAL), plus the variant's ``--dynamic-config-value``s; then: its idle
CPU over 10 s, a one-activity workflow back to back (p50 of 35, eager and plain start),
a ``workflow.sleep(0.1)``, how soon a started workflow is visible to
``count_workflows``, and 400 workflows at concurrency 20 (calls/s and the server's CPU
per workflow). Results: ``results.md`` beside this file.

    .venv/bin/python bench/investigations/2026-12-05-dispatch-limiter/queue_readers.py \\
        today transfer transfer+timer all4 today all4
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

from fastmcp_temporal.server.embedded import devserver

LIFTED = "=1000"
VARIANTS: dict[str, list[str]] = {
    "today": [],
    "transfer": ["history.transferProcessorMaxPollRPS"],
    "transfer+timer": ["history.transferProcessorMaxPollRPS", "history.timerProcessorMaxPollRPS"],
    "all4": [
        "history.transferProcessorMaxPollRPS",
        "history.timerProcessorMaxPollRPS",
        "history.visibilityProcessorMaxPollRPS",
        "history.outboundProcessorMaxPollRPS",
    ],
}


@activity.defn
async def echo(text: str) -> str:
    return text


@workflow.defn(sandboxed=False)
class EchoWorkflow:
    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_activity(
            echo, text, start_to_close_timeout=timedelta(seconds=10)
        )


@workflow.defn(sandboxed=False)
class SleepWorkflow:
    @workflow.run
    async def run(self, seconds: float) -> None:
        await workflow.sleep(seconds)


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().split(")")[-1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def connect(port: int) -> Client:
    for _ in range(100):
        try:
            return await Client.connect(f"127.0.0.1:{port}")
        except RuntimeError:
            await asyncio.sleep(0.2)
    raise RuntimeError("the dev server did not start")


async def back_to_back(client: Client, *, eager: bool) -> float:
    times = []
    for call in range(40):
        began = time.perf_counter()
        handle = await client.start_workflow(
            EchoWorkflow.run, "x", id=f"c-{eager}-{call}", task_queue="q", request_eager_start=eager
        )
        await handle.result()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times[5:])


async def short_sleeps(client: Client) -> float:
    times = []
    for run in range(6):
        began = time.perf_counter()
        handle = await client.start_workflow(
            SleepWorkflow.run, 0.1, id=f"s-{run}", task_queue="q", request_eager_start=True
        )
        await handle.result()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


async def visibility_lag(client: Client) -> float:
    lags = []
    for run in range(10):
        began = time.perf_counter()
        await client.start_workflow(SleepWorkflow.run, 0.0, id=f"v-{run}", task_queue="q")
        while not (await client.count_workflows(f"WorkflowId = 'v-{run}'")).count:
            await asyncio.sleep(0.002)
        lags.append((time.perf_counter() - began) * 1000)
    return statistics.median(lags)


async def concurrency_20(client: Client, server_pid: int) -> tuple[float, float]:
    """Calls per second, and the server's CPU milliseconds per workflow."""
    began, cpu_before = time.perf_counter(), cpu_seconds(server_pid)
    slots = asyncio.Semaphore(20)

    async def one(call: int) -> None:
        async with slots:
            handle = await client.start_workflow(
                EchoWorkflow.run, "x", id=f"t-{call}", task_queue="q", request_eager_start=True
            )
            await handle.result()

    await asyncio.gather(*(one(call) for call in range(400)))
    elapsed, cpu = time.perf_counter() - began, cpu_seconds(server_pid) - cpu_before
    return 400 / elapsed, cpu / 400 * 1000


async def measure(variant: str) -> None:
    port = devserver.free_port()
    args = devserver.start_dev_command(Path(tempfile.mkdtemp()), port=port, ui_port=None)
    for name in VARIANTS[variant]:
        args += ["--dynamic-config-value", name + LIFTED]
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = await connect(port)
        await asyncio.sleep(3)
        cpu_before = cpu_seconds(server.pid)
        await asyncio.sleep(10)
        idle = (cpu_seconds(server.pid) - cpu_before) / 10 * 100
        workflows, activities = [EchoWorkflow, SleepWorkflow], [echo]
        async with Worker(client, task_queue="q", workflows=workflows, activities=activities):
            eager = await back_to_back(client, eager=True)
            plain = await back_to_back(client, eager=False)
            sleep = await short_sleeps(client)
            lag = await visibility_lag(client)
            rate, cpu = await concurrency_20(client, server.pid)
        print(
            f"| {variant} | {idle:.2f}% | {eager:.1f} | {plain:.1f} | {sleep:.0f} ms "
            f"| {lag:.0f} ms | {rate:.1f} | {cpu:.1f} ms |",
            flush=True,
        )
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    for variant in sys.argv[1:]:
        asyncio.run(measure(variant))
