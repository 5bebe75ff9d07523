"""Fairness between callers: every task carries its caller's Temporal fairness key.

Real FastMCP servers over streamable HTTP with real bearer tokens, tasks on the
session's Temporal dev server (started with fairness on). What is checked is
what Temporal dispatches by: the ``Priority`` on the task's workflow (its
``describe``), also after continue-as-new, and that the legs inherit it: with
one worker slot, a second caller's leg is dispatched ahead of the first
caller's backlog (an order, not a time). Fairness orders each task-queue
partition on its own, so also: the embedded server keeps every queue's tasks on
one partition, and a Temporal that spreads them is reported. How much fairness
helps a waiting caller is a benchmark (``bench/fairness.py``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from fastmcp import Context, FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from temporalio.client import Client as TemporalClient
from temporalio.common import Priority

from fastmcp_temporal import DevServer, FairnessCaller, TemporalTasks
from fastmcp_temporal.server.core import scope
from fastmcp_temporal.server.tasks import fairness
from fastmcp_temporal.workflows.models import CallerSnapshot
from tests.helpers import eventually
from tests.ports import run_server_async
from tests.raw_tasks import ACCEPT, create, wait_for, workflow_ids_on
from tests.wire import RawMcp

BuildTasks = Callable[..., TemporalTasks]
SECRET = "fairness tests' scope secret value"
USERS = {
    "alice": {"client_id": "app", "sub": "alice", "scopes": []},
    "bob": {"client_id": "app", "sub": "bob", "scopes": []},
}
#: Tasks alice queues behind the one that holds the only leg slot.
BACKLOG = 5


def build_server(extension: TemporalTasks, gate: asyncio.Event, started: list[str]) -> FastMCP:
    mcp = FastMCP("fairness", auth=StaticTokenVerifier(tokens=USERS))
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def work(label: str = "") -> str:
        started.append(label)
        await asyncio.wait_for(gate.wait(), 60)
        return label

    @mcp.tool(task=True)
    async def ask_then_tell(ctx: Context) -> Any:
        if not ctx.input_responses:
            return mcp_types.InputRequiredResult(
                input_requests={
                    "go": mcp_types.ElicitRequest(
                        params=mcp_types.ElicitRequestFormParams(
                            message="Go?", requested_schema={"type": "object", "properties": {}}
                        )
                    )
                }
            )
        return "told"

    return mcp


def user_scope(user: str) -> str:
    """``scope.task_scope`` of a user of client ``app`` (no issuer)."""
    return json.dumps(["app", None, user], separators=(",", ":"))


async def workflow_priority(
    temporal_client: TemporalClient, task_queue: str, task_id: str
) -> Priority:
    """The priority of the task's latest run, as Temporal dispatches its tasks."""
    (workflow_id,) = {
        w for w in await workflow_ids_on(temporal_client, task_queue, task_id) if task_id in w
    }
    description = await temporal_client.get_workflow_handle(workflow_id).describe()
    return Priority._from_proto(description.raw_description.workflow_execution_info.priority)


async def run_one(extension: TemporalTasks, tool: str = "work", *users: str) -> list[str]:
    """One task of ``tool`` per user, each run to completion; their task ids."""
    gate, started, task_ids = asyncio.Event(), [], []
    gate.set()
    async with run_server_async(build_server(extension, gate, started)) as url:
        for user in users or ("alice",):
            raw = RawMcp(url, bearer=user)
            task_id = await create(raw, tool)
            if tool == "ask_then_tell":
                parked = await wait_for(raw, task_id, "input_required")
                (key,) = parked["inputRequests"]
                answer = {"taskId": task_id, "inputResponses": {key: ACCEPT}}
                await raw.result("tasks/update", answer)
            final = await wait_for(raw, task_id, "completed", "failed")
            assert final["status"] == "completed", final
            task_ids.append(task_id)
    return task_ids


async def test_each_caller_scope_is_the_fairness_key_of_its_tasks(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient, task_queue: str
) -> None:
    """The key is the scope's keyed tag (it names nobody), weight 1; two users of one
    client get two keys."""
    extension = temporal_tasks(scope_secret=SECRET)
    alices_key = scope.scope_tag(user_scope("alice"), SECRET.encode())
    bobs_key = scope.scope_tag(user_scope("bob"), SECRET.encode())
    assert alices_key != bobs_key and "alice" not in alices_key
    task_ids = await run_one(extension, "work", "alice", "bob")
    for task_id, key in zip(task_ids, (alices_key, bobs_key), strict=True):
        priority = await workflow_priority(temporal_client, task_queue, task_id)
        assert (priority.fairness_key, priority.fairness_weight) == (key, 1.0)


async def test_a_hook_chooses_key_and_weight_and_continue_as_new_keeps_them(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient, task_queue: str
) -> None:
    """The hook sees the caller; its answer is on the run that continued as new too
    (``rounds_per_run=1``: the answered round runs in a second run)."""
    seen: list[FairnessCaller] = []

    def by_user(caller: FairnessCaller) -> tuple[str, float]:
        seen.append(caller)
        return f"user-{caller.subject}", 3.0

    extension = temporal_tasks(fairness=by_user, rounds_per_run=1)
    (task_id,) = await run_one(extension, "ask_then_tell")
    workflow_id = next(
        w for w in await workflow_ids_on(temporal_client, task_queue, task_id) if task_id in w
    )
    runs = [w async for w in temporal_client.list_workflows(f"WorkflowId = '{workflow_id}'")]
    assert len(runs) == 2, "the answered round ran after continue-as-new"
    latest = await workflow_priority(temporal_client, task_queue, task_id)
    assert (latest.fairness_key, latest.fairness_weight) == ("user-alice", 3.0)
    (caller,) = seen
    assert (caller.tool_name, caller.client_id, caller.subject) == ("ask_then_tell", "app", "alice")
    assert caller.scope == user_scope("alice")


@pytest.mark.parametrize("switch", ["argument", "environment"])
async def test_fairness_can_be_switched_off(
    temporal_tasks: BuildTasks,
    temporal_client: TemporalClient,
    task_queue: str,
    monkeypatch: pytest.MonkeyPatch,
    switch: str,
) -> None:
    if switch == "argument":
        extension = temporal_tasks(fairness=False)
    else:
        monkeypatch.setenv(fairness.FAIRNESS_ENV, "false")
        extension = temporal_tasks()
    (task_id,) = await run_one(extension)
    assert (await workflow_priority(temporal_client, task_queue, task_id)).fairness_key is None


async def pending_legs(temporal_client: TemporalClient, task_queue: str) -> int:
    """Legs scheduled on ``task_queue``'s tasks (running or waiting for a slot)."""
    count = 0
    async for execution in temporal_client.list_workflows(
        f"TaskQueue = '{task_queue}' AND ExecutionStatus = 'Running'"
    ):
        description = await temporal_client.get_workflow_handle(execution.id).describe()
        count += len(description.raw_description.pending_activities)
    return count


async def test_the_legs_inherit_the_key_another_callers_leg_overtakes_a_backlog(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient, task_queue: str
) -> None:
    """One leg slot: one of alice's legs holds it (usually her first; a workflow task
    delayed under load lets another go first) and the rest queue; bob's leg, queued
    last, is dispatched before most of her backlog (first in, first out would run it
    last). Only the workflow carries the key, so this is the legs inheriting it."""
    gate, started = asyncio.Event(), []
    extension = temporal_tasks(worker_options={"max_concurrent_activities": 1})
    try:
        async with run_server_async(build_server(extension, gate, started)) as url:
            alice, bob = RawMcp(url, bearer="alice"), RawMcp(url, bearer="bob")
            alices = [await create(alice, "work", {"label": f"a{i}"}) for i in range(BACKLOG + 1)]
            await eventually(lambda: len(started) == 1)
            await until(lambda: pending_legs(temporal_client, task_queue), BACKLOG + 1)
            bobs = await create(bob, "work", {"label": "b"})
            await until(lambda: pending_legs(temporal_client, task_queue), BACKLOG + 2)
            gate.set()
            for raw, task_id in [*((alice, t) for t in alices), (bob, bobs)]:
                await wait_for(raw, task_id, "completed")
    finally:
        gate.set()
    assert sorted(started) == sorted([*(f"a{i}" for i in range(BACKLOG + 1)), "b"])
    assert started.index("b") <= 3, f"bob's leg waited behind alice's backlog: {started}"


async def until(count: Callable[[], Awaitable[int]], expected: int) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60  # only a failure waits this long
    while (seen := await count()) != expected:
        assert loop.time() < deadline, f"{seen} legs scheduled, expected {expected}"
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("answer", [("", 1.0), ("k" * 65, 1.0), ("ok", 0.0), ("ok", 5000.0)])
def test_a_hook_answer_temporal_would_refuse_or_clamp_is_an_error(
    answer: tuple[str, float],
) -> None:
    policy = fairness.Fairness(lambda caller: answer, scope_secret=None)
    with pytest.raises(ValueError, match="fairness hook"):
        policy.priority("tool", CallerSnapshot())


#: Tasks left waiting on a queue nobody polls, to see where Temporal put them.
UNPOLLED = 16


async def leave_waiting(temporal_client: TemporalClient, task_queue: str) -> list[str]:
    """``UNPOLLED`` workflows on ``task_queue``, which no worker polls: their first
    workflow tasks wait on whichever partitions Temporal wrote them to."""
    ids = [f"unpolled-{uuid.uuid4().hex[:8]}" for _ in range(UNPOLLED)]
    for workflow_id in ids:
        await temporal_client.start_workflow(
            "NoWorkerServesThis", id=workflow_id, task_queue=task_queue
        )
    return ids


async def all_waiting(temporal_client: TemporalClient, task_queue: str) -> dict[int, int]:
    """The queue's waiting workflow tasks per partition, once Temporal counts all of them."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60  # only a failure waits this long
    while True:
        found = await fairness.waiting_by_partition(temporal_client, task_queue)
        counts = found.get("workflow", {})
        if sum(counts.values()) >= UNPOLLED:
            return counts
        assert loop.time() < deadline, f"Temporal counted {counts} of {UNPOLLED} waiting"
        await asyncio.sleep(0.1)


async def test_the_embedded_server_keeps_a_queues_tasks_on_one_partition(
    temporal_client: TemporalClient, task_queue: str
) -> None:
    """Fairness orders one partition: a queue spread over several would let a
    caller's task wait behind most of another's backlog again."""
    ids = await leave_waiting(temporal_client, task_queue)
    try:
        assert await all_waiting(temporal_client, task_queue) == {0: UNPOLLED}
    finally:
        for workflow_id in ids:
            await temporal_client.get_workflow_handle(workflow_id).terminate("test over")


async def test_a_front_end_reports_a_queue_temporal_spreads_over_partitions(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Temporal with its default four write partitions (as a cluster, Temporal
    Cloud, or a dev server started without our switches has): a front end with
    fairness on says so, naming the queue and the setting. (No worker here: it
    would take the workflows left waiting.)"""
    monkeypatch.setattr(fairness, "PARTITION_CHECK_S", 0.05)
    partitions = ["--dynamic-config-value", "matching.numTaskqueueWritePartitions=4"]
    server = await DevServer.start(
        data_dir=tmp_path, in_memory=True, ui=False, extra_args=partitions
    )
    try:
        client = await TemporalClient.connect(server.address, namespace=server.namespace)
        queue = f"spread-{uuid.uuid4().hex[:8]}"
        await leave_waiting(client, queue)
        assert len(await all_waiting(client, queue)) > 1
        front_end = FastMCP("spread")
        front_end.add_extension(
            TemporalTasks(address=server.address, task_queue=queue, run_worker=False, ui=False)
        )
        with caplog.at_level(logging.WARNING, logger=fairness.__name__):
            async with run_server_async(front_end):
                await eventually(lambda: any(queue in r.getMessage() for r in caplog.records))
        (warning,) = [r.getMessage() for r in caplog.records if r.name == fairness.__name__]
        assert "matching.numTaskqueueWritePartitions=1" in warning
    finally:
        server.stop()
