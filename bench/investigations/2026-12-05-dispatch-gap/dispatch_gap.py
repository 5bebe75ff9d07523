"""Why a default tool's call takes ~50 ms back to back and ~20 ms spaced: Temporal's dispatch.

A raw ``temporalio`` workflow with one activity (no fastmcp-temporal), started eagerly
and not, 40 calls one after another with ``--gap`` seconds between them, on a fresh
in-memory dev server started as the embedded one is (``--variant``: without the
fairness settings, or without eager activity dispatch). Prints the p50 from start to
``result()`` and the event times of one call's history (ms after its start), which
show where the time goes: the workflow task that follows the activity waits between
``WORKFLOW_TASK_SCHEDULED`` and ``WORKFLOW_TASK_STARTED``.

    .venv/bin/python bench/investigations/2026-12-05-dispatch-gap/dispatch_gap.py --gap 0
    .venv/bin/python bench/investigations/2026-12-05-dispatch-gap/dispatch_gap.py \\
        --gap 0.05 --variant no-fairness
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.worker import Worker

from fastmcp_temporal.server.embedded import devserver

CALLS = 40
WARM_UP = 5


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


def dev_command(variant: str) -> tuple[list[str], int]:
    port = devserver.free_port()
    args = devserver.start_dev_command(
        Path(tempfile.mkdtemp()), port=port, ui_port=None, in_memory=True, search_attributes=False
    )
    dropped = {
        "no-fairness": devserver.FAIRNESS_DYNAMIC_CONFIG,
        "no-eager-activity": devserver.EAGER_DYNAMIC_CONFIG,
    }.get(variant, ())
    for value in dropped:
        at = args.index(value)
        del args[at - 1 : at + 1]
    return args, port


async def main(gap: float, variant: str) -> None:
    args, port = dev_command(variant)
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                client = await Client.connect(f"127.0.0.1:{port}")
                break
            except RuntimeError:
                await asyncio.sleep(0.2)
        async with Worker(client, task_queue="q", workflows=[EchoWorkflow], activities=[echo]):
            for eager in (True, False):
                times: list[float] = []
                for call in range(CALLS):
                    began = time.perf_counter()
                    handle = await client.start_workflow(
                        EchoWorkflow.run,
                        "x",
                        id=f"call-{eager}-{call}",
                        task_queue="q",
                        request_eager_start=eager,
                    )
                    await handle.result()
                    times.append((time.perf_counter() - began) * 1000)
                    await asyncio.sleep(gap)
                history = client.get_workflow_handle(f"call-{eager}-{CALLS - 1}")
                events = [event async for event in history.fetch_history_events()]
                start = events[0].event_time.ToMilliseconds()
                timeline = ", ".join(
                    f"{EventType.Name(event.event_type).removeprefix('EVENT_TYPE_').lower()} "
                    f"+{event.event_time.ToMilliseconds() - start}"
                    for event in events
                )
                label = "eager start" if eager else "plain start"
                p50 = statistics.median(times[WARM_UP:])
                print(f"| {variant} | gap {gap} s | {label} | p50 {p50:.1f} ms | {timeline} |")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between two calls")
    parser.add_argument(
        "--variant", choices=["default", "no-fairness", "no-eager-activity"], default="default"
    )
    args = parser.parse_args()
    asyncio.run(main(args.gap, args.variant))
