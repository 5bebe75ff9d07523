"""One caller's flood vs another caller's next task: with fairness, without, and on a spread queue.

    .venv/bin/python bench/fairness.py --out bench/results/fairness.md

Alice creates ``--flood`` tasks of a tool that sleeps ``--leg-s``; once they are
created, bob creates one that sleeps ``--bob-s``. One worker in process with
``--slots`` activity slots, so alice's legs queue for real. Both are bearer-token
callers of one FastMCP server over streamable HTTP (raw JSON-RPC), so each is
its own caller scope and fairness key. Reported per run: bob's task from his
``tools/call`` to its workflow's close (Temporal's clock, not a client's poll),
how many of alice's tool bodies started before bob's (an order: it does not
depend on how fast a loaded machine is), and on how many partitions alice's
legs were waiting when bob's task ended.

Three modes, each ``--runs`` times, interleaved round by round:

- **on**: a dev server started as the embedded one is (fairness on, one write
  partition per queue: ``devserver.FAIRNESS_DYNAMIC_CONFIG``);
- **off**: the same server, ``TemporalTasks(fairness=False)`` (the control);
- **on, 4 partitions**: fairness on, on a dev server whose queues keep
  Temporal's default of four write partitions, as a cluster, Temporal Cloud or
  a dev server started without our switches has (what issue 49 measured).

Each run has its own task queue and its own server and worker; alice's tasks
left after a run are terminated before the next.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
from fastmcp import FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.utilities.tests import run_server_async
from support.mcp_http import McpHttp
from support.smoke import parse_args
from temporalio.client import Client

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.server.tasks.fairness import waiting_by_partition
from fastmcp_temporal.server.temporal.connection import exit_now

USERS = {
    "alice": {"client_id": "bench", "sub": "alice", "scopes": []},
    "bob": {"client_id": "bench", "sub": "bob", "scopes": []},
}
#: Temporal's default, which ``devserver.FAIRNESS_DYNAMIC_CONFIG`` lowers to one.
FOUR_WRITE_PARTITIONS = ["--dynamic-config-value", "matching.numTaskqueueWritePartitions=4"]
MODES = ("on", "off", "on, 4 partitions")
#: Alice's concurrent creators.
CREATORS = 8


@dataclass(frozen=True)
class Run:
    bob_s: float
    alice_before_bob: int
    partitions: int


@dataclass(frozen=True)
class Setup:
    flood: int
    leg_s: float
    bob_s: float
    slots: int
    secrets: dict[str, str]


async def one_run(server: DevServer, setup: Setup, *, fair: bool) -> Run:
    """Alice's flood, then bob's task, on a fresh queue of ``server``."""
    body_started: dict[str, float] = {}
    queue = f"fairness-{uuid.uuid4().hex[:8]}"
    extension = TemporalTasks(
        address=server.address,
        namespace=server.namespace,
        task_queue=queue,
        fairness=fair,
        worker_options={"max_concurrent_activities": setup.slots},
        **setup.secrets,
    )
    mcp = FastMCP("fairness-bench", auth=StaticTokenVerifier(tokens=USERS))
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def work(label: str, seconds: float) -> str:
        body_started.setdefault(label, time.time())
        await asyncio.sleep(seconds)
        return label

    async with (
        run_server_async(mcp) as url,
        httpx.AsyncClient(headers={"Authorization": "Bearer alice"}, timeout=60) as as_alice,
        httpx.AsyncClient(headers={"Authorization": "Bearer bob"}, timeout=60) as as_bob,
    ):
        alice, bob = McpHttp(url, as_alice), McpHttp(url, as_bob)
        labels = iter(range(setup.flood))

        async def create_as_alice() -> None:
            for i in labels:
                arguments = {"label": f"a{i}", "seconds": setup.leg_s}
                await alice.result("tools/call", {"name": "work", "arguments": arguments})

        await asyncio.gather(*(create_as_alice() for _ in range(CREATORS)))
        bob_called = time.time()
        arguments = {"label": "b", "seconds": setup.bob_s}
        created = await bob.result("tools/call", {"name": "work", "arguments": arguments})
        client = extension.engine.client
        closed = await closed_at(client, queue, created["taskId"])
        waiting = (await waiting_by_partition(client, queue)).get("activity", {})
        await terminate_leftovers(client, queue)
    bobs_start = body_started["b"]
    return Run(
        bob_s=closed - bob_called,
        alice_before_bob=sum(1 for label, t in body_started.items() if t < bobs_start),
        partitions=len(waiting),
    )


async def closed_at(client: Client, queue: str, task_id: str) -> float:
    """When Temporal closed the task's workflow."""
    query = f"TaskQueue = '{queue}'"
    while not (ids := [w.id async for w in client.list_workflows(query) if w.id.endswith(task_id)]):
        await asyncio.sleep(0.05)  # visibility lags the start a little
    handle = client.get_workflow_handle(ids[0])
    await handle.result()
    description = await handle.describe()
    assert description.close_time is not None
    return description.close_time.timestamp()


async def terminate_leftovers(client: Client, queue: str) -> None:
    """End alice's remaining tasks, so the next run starts on a quiet server."""
    query = f"TaskQueue = '{queue}' AND ExecutionStatus = 'Running'"
    ids = [w.id async for w in client.list_workflows(query)]
    semaphore = asyncio.Semaphore(16)

    async def end(workflow_id: str) -> None:
        async with semaphore:
            with contextlib.suppress(Exception):  # finished meanwhile
                await client.get_workflow_handle(workflow_id).terminate("bench over")

    await asyncio.gather(*(end(i) for i in ids))


@contextlib.asynccontextmanager
async def dev_server(data_dir: Path, extra_args: list[str]) -> AsyncIterator[DevServer]:
    server = await DevServer.start(data_dir=data_dir, ui=False, extra_args=extra_args)
    try:
        yield server
    finally:
        server.stop()


async def main(args: argparse.Namespace) -> None:
    data = Path(tempfile.mkdtemp(prefix="bench-fairness-"))
    setup = Setup(
        flood=args.flood,
        leg_s=args.leg_s,
        bob_s=args.bob_s,
        slots=args.slots,
        # A Temporal by address: the callers' tokens are sealed under a key of this run.
        secrets={
            "encryption_key": base64.b64encode(os.urandom(32)).decode(),
            "scope_secret": uuid.uuid4().hex,
            "payload_store": str(data / "payloads"),
        },
    )
    load_before = os.getloadavg()
    runs: dict[str, list[Run]] = {mode: [] for mode in MODES}
    async with (
        dev_server(data / "one-partition", []) as one_partition,
        dev_server(data / "four-partitions", FOUR_WRITE_PARTITIONS) as four_partitions,
    ):
        for round_number in range(1, args.runs + 1):
            for mode in MODES:
                server = four_partitions if mode == "on, 4 partitions" else one_partition
                run = await one_run(server, setup, fair=mode != "off")
                runs[mode].append(run)
                print(f"run {round_number} {mode}: {run}", file=sys.stderr)
    text = report(args, runs, load_before, os.getloadavg())
    if args.out is not None:
        Path(args.out).write_text(text)
    print(text)


def report(
    args: argparse.Namespace,
    runs: dict[str, list[Run]],
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> str:
    command = (
        f".venv/bin/python bench/fairness.py --flood {args.flood} --leg-s {args.leg_s} "
        f"--bob-s {args.bob_s} --slots {args.slots} --runs {args.runs} --out {args.out}"
    )
    lines = ["# Fairness between callers: bob's task behind alice's flood", ""]
    lines += ["```bash", command, "```", ""]
    lines.append(
        f"Machine load (1/5/15 min) {' / '.join(f'{x:.1f}' for x in load_before)} before, "
        f"{' / '.join(f'{x:.1f}' for x in load_after)} after (2 cores, shared)."
    )
    lines.append("")
    lines.append(
        f"Alice creates {args.flood} tasks of a tool that sleeps {args.leg_s} s, then bob one "
        f"that sleeps {args.bob_s} s; one worker in process with {args.slots} activity slots. "
        "*Bob's task*: from his `tools/call` to Temporal closing his task. *Alice's before*: "
        "her tool bodies that started before bob's (of the "
        f"{args.flood}). *Partitions*: how many of the queue's partitions held alice's "
        "waiting legs when bob's task ended. Modes interleaved round by round, each run on "
        "its own queue: **on** a dev server started as the embedded one is (fairness, one "
        "write partition), **off** the same server with `fairness=False`, **on, 4 "
        "partitions** a dev server that keeps Temporal's default four write partitions."
    )
    lines.append("")
    header = "| run |"
    rule = "|---|"
    for mode in MODES:
        header += f" {mode}: bob's task (s) | {mode}: alice's before |"
        rule += "---|---|"
        if mode != "off":
            header += f" {mode}: partitions |"
            rule += "---|"
    lines += [header, rule]
    for i in range(args.runs):
        row = f"| {i + 1} |"
        for mode in MODES:
            run = runs[mode][i]
            row += f" {run.bob_s:.2f} | {run.alice_before_bob} |"
            if mode != "off":
                row += f" {run.partitions} |"
        lines.append(row)
    lines.append("")
    for mode in MODES:
        times = [run.bob_s for run in runs[mode]]
        lines.append(
            f"- **{mode}**: bob's task median {statistics.median(times):.2f} s, longest "
            f"{max(times):.2f} s; {sum(t < 5 for t in times)} of {len(times)} under 5 s."
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=80)
    parser.add_argument("--leg-s", type=float, default=1.0)
    parser.add_argument("--bob-s", type=float, default=0.3)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default="bench/results/fairness.md")
    asyncio.run(main(parse_args(parser, flood=6, leg_s=0.2, bob_s=0.1, slots=2, runs=1, out=None)))
    exit_now(0)  # skip finalization: temporalio/sdk-python#300
