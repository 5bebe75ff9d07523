"""Per-caller quota (``server.tasks.quota``): never more than the limit open, across front ends.

Real FastMCP servers over streamable HTTP (raw JSON-RPC), tasks on the
session's Temporal dev server:

- 20 creators race a limit of 5, on one front end and split over two (one of
  them without a worker): exactly 5 tasks exist, the other 15 calls answer a
  retryable ``-32001`` with ``retryAfterMs``; once those tasks end, 5 new ones
  are admitted and the next is refused again;
- a cancelled task's slot is free again, and a task ended outside any worker
  (terminated by an operator) frees its slot for a front end with no worker;
- the limit is per caller, a tool may have its own pool, and a keyed retry of a
  task the caller already has is answered even at the limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest
from fastmcp import FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.server.protocol.idempotency import IDEMPOTENCY_KEY_META
from fastmcp_temporal.server.tasks.starter import ToolOptions
from tests.ports import run_server_async
from tests.raw_tasks import assert_clean, wait_for, workflow_ids_on
from tests.wire import RawMcp

BuildTasks = Callable[..., TemporalTasks]

LIMIT = 5
CREATORS = 20
TOKENS = {
    "alice": {"client_id": "app", "sub": "alice", "scopes": []},
    "bob": {"client_id": "app", "sub": "bob", "scopes": []},
}


def gated_server(extension: TemporalTasks, gate: asyncio.Event, **server: Any) -> FastMCP:
    """``hold`` runs until ``gate`` opens; ``quick`` ends at once."""
    mcp = FastMCP("quota", **server)
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def hold(n: int = 0) -> str:
        await asyncio.wait_for(gate.wait(), 60)
        return f"held {n}"

    @mcp.tool(task=True)
    async def quick() -> str:
        return "quick"

    return mcp


@asynccontextmanager
async def serving(*servers: FastMCP) -> AsyncIterator[list[RawMcp]]:
    async with AsyncExitStack() as stack:
        urls = [await stack.enter_async_context(run_server_async(mcp)) for mcp in servers]
        yield [RawMcp(url) for url in urls]


async def try_create(
    raw: RawMcp, tool: str = "hold", arguments: dict[str, Any] | None = None, **call: Any
) -> dict[str, Any]:
    """The ``tools/call`` response: ``result`` (a task) or ``error``."""
    _, body = await raw.call("tools/call", {"name": tool, "arguments": arguments or {}}, **call)
    return body


def assert_over_quota(body: dict[str, Any]) -> None:
    assert "error" in body, body
    error = body["error"]
    assert error["code"] == -32001, error
    assert error["data"]["retryable"] is True
    assert error["data"]["retryAfterMs"] > 0
    assert "Too many open tasks" in error["message"]
    assert_clean(body)


async def race(fronts: list[RawMcp], count: int) -> tuple[list[str], list[dict[str, Any]]]:
    """``count`` concurrent creations spread over ``fronts``: (task ids, refusals)."""
    bodies = await asyncio.gather(
        *(try_create(fronts[i % len(fronts)], arguments={"n": i}) for i in range(count))
    )
    admitted = [body["result"]["taskId"] for body in bodies if "result" in body]
    refused = [body for body in bodies if "result" not in body]
    return admitted, refused


@pytest.mark.parametrize("front_ends", [1, 2])
async def test_twenty_racing_creators_never_open_more_than_the_limit(
    temporal_tasks: BuildTasks,
    temporal_client: TemporalClient,
    task_queue: str,
    front_ends: int,
) -> None:
    gate = asyncio.Event()
    servers = [gated_server(temporal_tasks(max_open_tasks_per_caller=LIMIT), gate)]
    if front_ends == 2:  # a second replica, without a worker, on the same queue
        servers.append(
            gated_server(temporal_tasks(max_open_tasks_per_caller=LIMIT, run_worker=False), gate)
        )
    try:
        async with serving(*servers) as fronts:
            admitted, refused = await race(fronts, CREATORS)
            assert len(admitted) == LIMIT, (admitted, refused)
            for body in refused:
                assert_over_quota(body)
            # What Temporal holds: exactly the admitted tasks, none unreported. Visibility
            # lags: wait until it shows the last one, then give a sixth time to appear.
            await workflow_ids_on(temporal_client, task_queue, admitted[-1])
            await asyncio.sleep(1)
            query = f"TaskQueue = '{task_queue}'"
            ids = [execution.id async for execution in temporal_client.list_workflows(query)]
            assert sorted(ids) == sorted(f"mcp-anon-{task_id}" for task_id in admitted)

            gate.set()
            for task_id in admitted:
                await wait_for(fronts[0], task_id, "completed")
            gate.clear()
            again, refused_again = await race(fronts, LIMIT + 1)
            assert len(again) == LIMIT, (again, refused_again)
            (over,) = refused_again
            assert_over_quota(over)
    finally:
        gate.set()


async def test_a_cancelled_or_terminated_task_frees_its_slot_without_a_worker(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient
) -> None:
    """Limit 1. Cancelling the task (worker up) frees the slot; on a front end with no
    worker, a task that an operator terminates frees it too (the count needs no worker)."""
    gate = asyncio.Event()
    try:
        async with serving(gated_server(temporal_tasks(max_open_tasks_per_caller=1), gate)) as (
            raw,
        ):
            first = (await try_create(raw))["result"]["taskId"]
            assert_over_quota(await try_create(raw))
            await raw.result("tasks/cancel", {"taskId": first})
            await wait_for(raw, first, "cancelled")
            second = await try_create(raw)
            assert second["result"]["resultType"] == "task", second
            await raw.result("tasks/cancel", {"taskId": second["result"]["taskId"]})
            await wait_for(raw, second["result"]["taskId"], "cancelled")

        workerless = temporal_tasks(max_open_tasks_per_caller=1, run_worker=False)
        async with serving(gated_server(workerless, gate)) as (raw,):
            parked = (await try_create(raw))["result"]["taskId"]
            assert_over_quota(await try_create(raw))
            await temporal_client.get_workflow_handle(f"mcp-anon-{parked}").terminate("operator")
            after = await try_create(raw)
            assert after["result"]["resultType"] == "task", after
            await temporal_client.get_workflow_handle(
                f"mcp-anon-{after['result']['taskId']}"
            ).terminate("test over")
    finally:
        gate.set()


async def test_the_limit_is_per_caller_and_per_tool_pool(temporal_tasks: BuildTasks) -> None:
    """Alice at her limit does not stop bob; ``quick`` has its own pool of 1, so alice's
    ``hold`` tasks do not count against it."""
    gate = asyncio.Event()
    extension = temporal_tasks(
        max_open_tasks_per_caller=2,
        tools={"quick": ToolOptions(max_open_tasks_per_caller=1)},
        scope_secret="a secret of at least sixteen bytes",
    )
    mcp = gated_server(extension, gate, auth=StaticTokenVerifier(tokens=TOKENS))
    try:
        async with run_server_async(mcp) as url:
            alice, bob = RawMcp(url, bearer="alice"), RawMcp(url, bearer="bob")
            for _ in range(2):
                assert "result" in await try_create(alice)
            assert_over_quota(await try_create(alice))
            assert "result" in await try_create(bob)
            assert "result" in await try_create(alice, "quick")
    finally:
        gate.set()


async def test_a_keyed_retry_at_the_limit_gets_its_task(temporal_tasks: BuildTasks) -> None:
    """Limit 1, held by a keyed task: its retry answers the same task, a new call is refused."""
    gate = asyncio.Event()
    try:
        async with serving(gated_server(temporal_tasks(max_open_tasks_per_caller=1), gate)) as (
            raw,
        ):
            meta = {"_meta": {IDEMPOTENCY_KEY_META: "retry-me"}}
            params = {"name": "hold", "arguments": {}, **meta}
            first = await raw.result("tools/call", params)
            retry = await raw.result("tools/call", params)
            assert retry["taskId"] == first["taskId"]
            assert_over_quota(await try_create(raw))
            gate.set()
            await wait_for(raw, first["taskId"], "completed")
    finally:
        gate.set()
