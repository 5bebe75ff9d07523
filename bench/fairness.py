"""One caller's backlog vs another caller's next task, with and without fairness.

    .venv/bin/python bench/fairness.py --flood 500 --rounds 1 --out bench/results/fairness.md

Caller A floods ``--flood`` slow tasks (each leg sleeps ``--leg-s``); once A's
backlog is queued, caller B creates one task. Reported: the time from B's
``tools/call`` answer until B's tool body starts. Both callers are real
bearer-token users of one FastMCP server over streamable HTTP (raw JSON-RPC),
so each is its own caller scope; the worker runs in process with
``--slots`` activity slots, so A's legs queue for real.

The two modes run on one embedded Temporal (the dev server that
``TemporalTasks()`` starts, fairness on, one write partition), interleaved
``off, on`` (then ``on, off``, ...), each on a fresh task queue, and only the
extension's ``fairness`` setting differs. A's tasks left after a mode's
measurement are terminated before the next mode starts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC
from pathlib import Path

import httpx
from fastmcp import FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.utilities.tests import run_server_async
from support.mcp_http import McpHttp
from support.smoke import parse_args

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.server.temporal.connection import exit_now
from fastmcp_temporal.testing import shared_temporal

USERS = {
    "A": {"client_id": "bench", "sub": "A", "scopes": []},
    "B": {"client_id": "bench", "sub": "B", "scopes": []},
}


async def one_mode(
    data_dir: Path, *, fair: bool, flood: int, leg_s: float, slots: int
) -> dict[str, float]:
    """Flood as A, then one task as B; seconds until B's body started, and more."""
    body_started: dict[str, float] = {}
    queue = f"fairness-{'on' if fair else 'off'}-{uuid.uuid4().hex[:8]}"
    extension = TemporalTasks(
        data_dir=data_dir,
        ui=False,
        task_queue=queue,
        fairness=fair,
        worker_options={"max_concurrent_activities": slots},
    )
    mcp = FastMCP("fairness-bench", auth=StaticTokenVerifier(tokens=USERS))
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def slow(label: str) -> str:
        body_started.setdefault(label, time.time())
        await asyncio.sleep(leg_s)
        return label

    async with (
        run_server_async(mcp) as url,
        httpx.AsyncClient(headers={"Authorization": "Bearer A"}, timeout=60) as as_a,
        httpx.AsyncClient(headers={"Authorization": "Bearer B"}, timeout=60) as as_b,
    ):
        a, b = McpHttp(url, as_a), McpHttp(url, as_b)
        labels = iter(range(flood))
        flood_began = time.monotonic()

        async def create_as_a() -> None:
            for i in labels:
                await a.result("tools/call", {"name": "slow", "arguments": {"label": f"a{i}"}})

        await asyncio.gather(*(create_as_a() for _ in range(16)))
        flood_s = time.monotonic() - flood_began
        a_done_before_b = len(body_started)
        created = await b.result("tools/call", {"name": "slow", "arguments": {"label": "b"}})
        b_created = time.time()
        while "b" not in body_started:
            await asyncio.sleep(0.01)
        waited = body_started["b"] - b_created
        a_started_before_b = sum(1 for k, t in body_started.items() if t < body_started["b"])
        assert created["resultType"] == "task"
        leg_scheduled = await leg_scheduled_at(extension, queue, created["taskId"])
        await terminate_leftovers(extension, queue)
    return {
        "wait_s": waited,
        "leg_scheduled_s": leg_scheduled - b_created,
        "flood_s": flood_s,
        "a_started_when_b_created": a_done_before_b,
        "a_started_before_b": a_started_before_b,
    }


async def leg_scheduled_at(extension: TemporalTasks, queue: str, task_id: str) -> float:
    """When Temporal recorded B's leg as scheduled (its workflow's first workflow task done)."""
    client = extension.engine.client
    query = f"TaskQueue = '{queue}'"
    (workflow_id,) = [w.id async for w in client.list_workflows(query) if w.id.endswith(task_id)]
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.HasField("activity_task_scheduled_event_attributes"):
            return event.event_time.ToDatetime().replace(tzinfo=UTC).timestamp()
    raise RuntimeError(f"B's leg was never scheduled ({workflow_id})")


async def terminate_leftovers(extension: TemporalTasks, queue: str) -> None:
    """End A's remaining tasks, so the next mode starts on a quiet server."""
    client = extension.engine.client
    query = f"TaskQueue = '{queue}' AND ExecutionStatus = 'Running'"
    ids = [w.id async for w in client.list_workflows(query)]
    semaphore = asyncio.Semaphore(16)

    async def end(workflow_id: str) -> None:
        async with semaphore:
            with contextlib.suppress(Exception):  # finished meanwhile
                await client.get_workflow_handle(workflow_id).terminate("bench over")

    await asyncio.gather(*(end(i) for i in ids))


async def main(args: argparse.Namespace) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="bench-fairness-"))
    results: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    async with shared_temporal(data_dir, ui=False):  # one server for every mode
        for round_number in range(args.rounds):
            order = (False, True) if round_number % 2 == 0 else (True, False)
            for fair in order:
                outcome = await one_mode(
                    data_dir, fair=fair, flood=args.flood, leg_s=args.leg_s, slots=args.slots
                )
                results[fair].append(outcome)
                mode = "on" if fair else "off"
                print(f"round {round_number + 1} fairness {mode}: {outcome}", file=sys.stderr)
    text = report(args, results)
    if args.out is not None:
        Path(args.out).write_text(text)
    print(text)


def report(args: argparse.Namespace, results: dict[bool, list[dict[str, float]]]) -> str:
    command = (
        f".venv/bin/python bench/fairness.py --flood {args.flood} --leg-s {args.leg_s} "
        f"--slots {args.slots} --rounds {args.rounds} --out {args.out}"
    )
    lines = ["# Fairness between callers: B's first task behind A's backlog", ""]
    lines += ["```bash", command, "```", ""]
    lines.append(
        f"Caller A floods {args.flood} tasks of a tool that sleeps {args.leg_s} s; then caller "
        f"B creates one. One worker in process with {args.slots} activity slots; embedded "
        "Temporal (dev server, fairness on, one write partition); both modes on the same "
        "server, interleaved, each on a fresh task queue. *Wait* is from B's `tools/call` "
        "answer to B's tool body starting."
    )
    lines.append("")
    lines.append(
        "| fairness | round | B's wait (s) | of which until B's leg was scheduled (s) "
        "| A's bodies started before B's | A's flood took (s) |"
    )
    lines.append("|---|---|---|---|---|---|")
    for fair in (False, True):
        for i, outcome in enumerate(results[fair], 1):
            lines.append(
                f"| {'on' if fair else 'off'} | {i} | {outcome['wait_s']:.2f} | "
                f"{outcome['leg_scheduled_s']:.2f} | "
                f"{outcome['a_started_before_b']} of {args.flood} | {outcome['flood_s']:.1f} |"
            )
    off = statistics.median(o["wait_s"] for o in results[False])
    on = statistics.median(o["wait_s"] for o in results[True])
    lines.append("")
    lines.append(
        f"Median wait: off {off:.2f} s, on {on:.2f} s: fairness cuts B's wait "
        f"{off / on:.0f}-fold (target: within 2 s with fairness on)."
    )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=500)
    parser.add_argument("--leg-s", type=float, default=1.0)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", default="bench/results/fairness.md")
    asyncio.run(main(parse_args(parser, flood=8, leg_s=0.2, slots=2, out=None)))
    exit_now(0)  # skip finalization: temporalio/sdk-python#300
