"""Issue 49 item 5: alice's 80 tasks of 1 s on a worker with 4 slots, then bob's one of 0.3 s.

    .venv/bin/python bench/investigations/2026-12-05-fairness-regression/repro.py \
        --variants current partitions4 partitions4+transfer20 --runs 5 [--history]

Each variant starts its own embedded dev server (a fresh data directory) with
the dynamic config it names, then runs ``--runs`` times in a row, each run on a
fresh task queue with a fresh FastMCP server and worker. Per run: bob's task
from his ``tools/call`` to its workflow's close (server time, not a client's
poll), how many of alice's bodies started before bob's (an order: no CPU speed
in it), where alice's legs wait when bob's task ends (tasks per partition), and
with ``--history`` bob's history as offsets from his call.

A variant is parts joined by ``+``: ``current`` (the embedded server as
shipped), ``transfer20`` (its transfer reader at Temporal's default 20 reads/s,
as before 15de497), ``noeageract`` (no eager activities), ``noeagerstart``,
``nofair`` (``fairness=False``), ``apart`` (a front end without a worker and
one ``fastmcp-temporal worker`` process), ``plain`` (durable plain calls, no
tasks extension), ``samequeue`` (one queue for every run, leftovers kept),
``local`` / ``localdefault`` / ``localwft`` (a short tool: local legs, with the
local-activity / no / workflow-task slots limited to ``--slots``),
``partitions4`` (Temporal's default four write partitions) and ``noforward``
(``matching.backlogNegligibleAge`` 1 s).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
from fastmcp import FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.utilities.tests import run_server_async
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from support.mcp_http import McpHttp  # noqa: E402

from fastmcp_temporal import TemporalTasks  # noqa: E402
from fastmcp_temporal.server.embedded import devserver  # noqa: E402
from fastmcp_temporal.server.tasks.fairness import waiting_by_partition  # noqa: E402
from fastmcp_temporal.server.temporal.connection import exit_now  # noqa: E402
from fastmcp_temporal.testing import shared_temporal  # noqa: E402

USERS = {
    "alice": {"client_id": "app", "sub": "alice", "scopes": []},
    "bob": {"client_id": "app", "sub": "bob", "scopes": []},
}


@contextlib.contextmanager
def variant_patches(variant: str) -> Iterator[dict[str, Any]]:
    """The dev-server switches and extension options a variant changes."""
    extension_options: dict[str, Any] = {}
    with ExitStack() as stack:
        for part in variant.split("+"):
            if part == "current":
                pass
            elif part == "transfer20":  # before 15de497
                stack.enter_context(mock.patch.object(devserver, "DISPATCH_DYNAMIC_CONFIG", ()))
            elif part == "partitions4":  # Temporal's default four write partitions
                stack.enter_context(
                    mock.patch.object(
                        devserver,
                        "FAIRNESS_DYNAMIC_CONFIG",
                        tuple(
                            v for v in devserver.FAIRNESS_DYNAMIC_CONFIG if "Partitions" not in v
                        ),
                    )
                )
            elif part == "noforward":  # children stop forwarding once their backlog is 1 s old
                stack.enter_context(
                    mock.patch.object(
                        devserver,
                        "DISPATCH_DYNAMIC_CONFIG",
                        (*devserver.DISPATCH_DYNAMIC_CONFIG, 'matching.backlogNegligibleAge="1s"'),
                    )
                )
            elif part == "noeageract":
                stack.enter_context(mock.patch.object(devserver, "EAGER_DYNAMIC_CONFIG", ()))
            elif part == "nofair":
                extension_options["fairness"] = False
            elif part == "noeagerstart":
                extension_options["_no_eager_start"] = True
            elif part == "apart":  # front end without a worker; one worker process
                extension_options["_apart"] = True
            elif part == "samequeue":  # one queue for every run, alice's leftovers left running
                extension_options["_queue"] = f"fair-{uuid.uuid4().hex[:8]}"
            elif part == "local":  # a short tool (FastMCP timeout): local legs, 4 local slots
                extension_options["_local"] = True
            elif part == "localdefault":  # a short tool, only activity slots limited
                extension_options["_local"] = "default"
            elif part == "localwft":  # a short tool, workflow task slots limited too
                extension_options["_local"] = "wft"
            elif part == "plain":  # durable plain calls (a client without the tasks extension)
                extension_options["_plain"] = True
            else:
                raise SystemExit(f"unknown variant part {part!r}")
        yield extension_options


async def one_run(
    data_dir: Path, options: dict[str, Any], *, flood: int, leg_s: float, bob_s: float, slots: int
) -> dict[str, Any]:
    options = dict(options)
    no_eager_start = options.pop("_no_eager_start", False)
    plain = options.pop("_plain", False)
    apart = options.pop("_apart", False)
    local = options.pop("_local", False)
    body_started: dict[str, float] = {}
    same_queue = options.pop("_queue", None)
    queue = same_queue or f"fair-{uuid.uuid4().hex[:8]}"
    if apart:
        options["run_worker"] = False
    else:
        options["worker_options"] = {"max_concurrent_activities": slots}
        if local is True:
            options["worker_options"]["max_concurrent_local_activities"] = slots
        elif local == "wft":
            options["worker_options"]["max_concurrent_workflow_tasks"] = slots
    extension = TemporalTasks(data_dir=data_dir, ui=False, task_queue=queue, **options)
    worker = None
    starts_file = data_dir / f"{queue}.starts"
    if apart:
        worker = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "fastmcp-temporal"),
                "worker",
                str(HERE / "flood_server.py"),
                "--task-queue",
                queue,
                "--max-concurrent-legs",
                str(slots),
                "--data-dir",
                str(data_dir),
            ],
            env={**os.environ, "FAIRNESS_REPRO_STARTS": str(starts_file)},
            stdout=subprocess.DEVNULL,
            stderr=open(data_dir / f"{queue}.worker.log", "wb"),  # noqa: SIM115
            start_new_session=True,
        )
    mcp = FastMCP("fairness-repro", auth=StaticTokenVerifier(tokens=USERS))
    mcp.add_extension(extension)

    @mcp.tool(task=True, timeout=10 if local else None)
    async def work(label: str, seconds: float) -> str:
        body_started.setdefault(label, time.time())
        await asyncio.sleep(seconds)
        return label

    async with (
        run_server_async(mcp) as url,
        httpx.AsyncClient(headers={"Authorization": "Bearer alice"}, timeout=60) as as_alice,
        httpx.AsyncClient(headers={"Authorization": "Bearer bob"}, timeout=60) as as_bob,
    ):
        if apart:
            await wait_for_poller(extension, queue)
        if no_eager_start:
            extension.engine.eager_start = False
        alice, bob = McpHttp(url, as_alice), McpHttp(url, as_bob)
        labels = iter(range(flood))

        async def create_as_alice() -> None:
            for i in labels:
                await alice.result(
                    "tools/call",
                    {"name": "work", "arguments": {"label": f"a{i}", "seconds": leg_s}},
                )

        async def plain_as_alice() -> None:
            for i in labels:
                call = {"name": "work", "arguments": {"label": f"a{i}", "seconds": leg_s}}
                await alice.result("tools/call", call, declare_tasks=False)

        client = extension.engine.client
        query = f"TaskQueue = '{queue}' AND StartTime > '{datetime.now(UTC).isoformat()}'"
        flood_began = time.time()
        answered_at = None
        if plain:
            alice_calls = [asyncio.create_task(plain_as_alice()) for _ in range(flood)]
            while (await client.count_workflows(query)).count < flood:
                await asyncio.sleep(0.05)
            bob_called = time.time()
            answer = await bob.result(
                "tools/call",
                {"name": "work", "arguments": {"label": "b", "seconds": bob_s}},
                declare_tasks=False,
            )
            answered_at = time.time()
            assert answer.get("content"), answer
            # Workflow ids are mcp-<caller's scope tag>-<task id>: bob's tag is the rare one.
            ids = [w.id async for w in client.list_workflows(query)]
            tags = [i.split("-")[1] for i in ids]
            (bobs,) = [i for i, tag in zip(ids, tags, strict=True) if tags.count(tag) == 1]
            created = {"taskId": bobs.split("-", 2)[2]}
        else:
            await asyncio.gather(*(create_as_alice() for _ in range(8)))
            bob_called = time.time()
            created = await bob.result(
                "tools/call", {"name": "work", "arguments": {"label": "b", "seconds": bob_s}}
            )
            assert created["resultType"] == "task", created
        deadline = time.monotonic() + 120
        while True:
            ids = [
                w.id async for w in client.list_workflows(query) if w.id.endswith(created["taskId"])
            ]
            if ids:
                handle = client.get_workflow_handle(ids[0])
                description = await handle.describe()
                if description.close_time is not None:
                    break
            assert time.monotonic() < deadline, "bob's task never closed"
            await asyncio.sleep(0.05)
        events = []
        async for event in handle.fetch_history_events():
            kind = event.WhichOneof("attributes").removesuffix("_event_attributes")
            stamp = event.event_time.ToDatetime().replace(tzinfo=UTC).timestamp()
            extra = ""
            if kind == "activity_task_started":
                attributes = event.activity_task_started_event_attributes
                extra = f" attempt={attributes.attempt} identity={attributes.identity}"
            if kind == "workflow_task_started":
                extra = f" identity={event.workflow_task_started_event_attributes.identity}"
            events.append(f"{stamp - bob_called:+.3f} {kind}{extra}")
        if apart:
            for line in starts_file.read_text().splitlines():
                label, stamp = line.split()
                body_started.setdefault(label, float(stamp))
        a_before = sum(1 for k, t in body_started.items() if k != "b" and t < body_started["b"])
        a_at_call = sum(1 for k, t in body_started.items() if k != "b" and t < bob_called)
        closed = description.close_time.timestamp()
        waiting = await waiting_by_partition(client, queue)
        if same_queue is None:
            await terminate_leftovers(extension, queue)
        if worker is not None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        if plain:
            for call in alice_calls:
                call.cancel()
            await asyncio.gather(*alice_calls, return_exceptions=True)
    return {
        "bob_answer_s": round(answered_at - bob_called, 3) if answered_at else None,
        "bob_done_s": round(closed - bob_called, 3),
        "bob_body_wait_s": round(body_started["b"] - bob_called, 3),
        "alice_before_bob": a_before,
        "alice_started_at_bob_call": a_at_call,
        "flood_s": round(bob_called - flood_began, 2),
        "legs_waiting_by_partition": waiting.get("activity", {}),
        "bob_history": events,
    }


async def wait_for_poller(extension: TemporalTasks, queue: str) -> None:
    """Until the worker process polls ``queue``'s activities."""
    client = extension.engine.client
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    )
    deadline = time.monotonic() + 120
    while not (await client.workflow_service.describe_task_queue(request)).pollers:
        assert time.monotonic() < deadline, "the worker never polled"
        await asyncio.sleep(0.2)


async def terminate_leftovers(extension: TemporalTasks, queue: str) -> None:
    client = extension.engine.client
    query = f"TaskQueue = '{queue}' AND ExecutionStatus = 'Running'"
    ids = [w.id async for w in client.list_workflows(query)]
    semaphore = asyncio.Semaphore(16)

    async def end(workflow_id: str) -> None:
        async with semaphore:
            with contextlib.suppress(Exception):
                await client.get_workflow_handle(workflow_id).terminate("run over")

    await asyncio.gather(*(end(i) for i in ids))


async def main(args: argparse.Namespace) -> None:
    for variant in args.variants:
        data_dir = Path(tempfile.mkdtemp(prefix="fairness-repro-"))
        with variant_patches(variant) as options:
            async with shared_temporal(data_dir, ui=False):
                for run in range(1, args.runs + 1):
                    outcome = await one_run(
                        data_dir,
                        options,
                        flood=args.flood,
                        leg_s=args.leg_s,
                        bob_s=args.bob_s,
                        slots=args.slots,
                    )
                    history = outcome.pop("bob_history")
                    print(json.dumps({"variant": variant, "run": run, **outcome}), flush=True)
                    if args.history:
                        for line in history:
                            print("    " + line, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", default=["current"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--flood", type=int, default=80)
    parser.add_argument("--leg-s", type=float, default=1.0)
    parser.add_argument("--bob-s", type=float, default=0.3)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--history", action="store_true")
    asyncio.run(main(parser.parse_args()))
    exit_now(0)
