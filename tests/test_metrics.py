"""The Prometheus endpoint: scraped over HTTP and parsed as Prometheus parses it.

A real FastMCP server over streamable HTTP whose ``TemporalTasks`` connects to
the session's Temporal with ``metrics_port``; its in-process worker shares the
runtime, so one endpoint serves the SDK's ``temporal_*`` metrics, the front
end's MCP metrics and the ones the task workflows record. The counts asserted
are those of the requests this test sent: the idempotent hit and the quota
rejection are real ones (a key sent twice, a caller over ``hold``'s limit of 1),
so a guard that stops reporting fails here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastmcp import Context, FastMCP
from prometheus_client.parser import text_string_to_metric_families

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.server.core import metrics
from fastmcp_temporal.server.embedded.shared import EmbeddedServer
from fastmcp_temporal.server.protocol.idempotency import IDEMPOTENCY_KEY_META
from fastmcp_temporal.server.tasks.starter import ToolOptions
from tests.ports import free_port, run_server_async
from tests.raw_tasks import ACCEPT, create, question, wait_for
from tests.test_quota import assert_over_quota, try_create
from tests.wire import RawMcp

QUICK_TASKS = 3


class Scrape:
    """One scrape: ``value(name, **labels)`` sums the samples whose labels match."""

    def __init__(self, text: str) -> None:
        self.samples = [
            sample for family in text_string_to_metric_families(text) for sample in family.samples
        ]

    def value(self, name: str, **labels: str) -> float:
        return sum(
            sample.value
            for sample in self.samples
            if sample.name == name and labels.items() <= sample.labels.items()
        )

    def names(self) -> set[str]:
        return {sample.name for sample in self.samples}


async def scrape(port: int) -> Scrape:
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.get(f"http://127.0.0.1:{port}/metrics")
    response.raise_for_status()
    return Scrape(response.text)


def build_server(extension: TemporalTasks, gate: asyncio.Event) -> FastMCP:
    mcp = FastMCP("metrics")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def quick(n: int) -> int:
        return n

    @mcp.tool(task=True)
    async def asker(ctx: Context) -> Any:
        return question() if not ctx.input_responses else "answered"

    @mcp.tool(task=True)
    async def hold() -> str:
        await asyncio.wait_for(gate.wait(), 60)
        return "released"

    return mcp


class CountingMcp(RawMcp):
    """Counts the ``tasks/get`` it sends: the latency histogram must have seen each."""

    gets = 0

    async def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if method == "tasks/get":
            CountingMcp.gets += 1
        return await super().call(method, *args, **kwargs)


@pytest_asyncio.fixture(loop_scope="session")
async def served(
    temporal_server: EmbeddedServer,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[tuple[CountingMcp, int, asyncio.Event]]:
    monkeypatch.setattr(metrics, "OPEN_TASKS_INTERVAL_S", 0.2)
    port = free_port()
    extension = TemporalTasks(
        address=temporal_server.address,
        namespace=temporal_server.namespace,
        task_queue=task_queue,
        data_dir=tmp_path,
        metrics_port=port,
        tools={"hold": ToolOptions(max_open_tasks_per_caller=1)},
    )
    gate = asyncio.Event()
    try:
        async with run_server_async(build_server(extension, gate)) as url:
            yield CountingMcp(url), port, gate
    finally:
        gate.set()


async def test_the_endpoint_serves_temporal_and_mcp_metrics_that_count_what_happened(
    served: tuple[CountingMcp, int, asyncio.Event],
) -> None:
    raw, port, _ = served
    CountingMcp.gets = 0
    quick = [await create(raw, "quick", {"n": n}) for n in range(QUICK_TASKS)]
    held = await create(raw, "hold")
    asked = await create(raw, "asker")
    for task_id in quick:
        await wait_for(raw, task_id, "completed")
    parked = await wait_for(raw, asked, "input_required")

    # Open tasks, counted in visibility: one working (held), one parked (asked).
    deadline = asyncio.get_running_loop().time() + 60  # visibility counts them later under load
    while True:
        seen = await scrape(port)
        open_now = {
            s: seen.value("mcp_tasks_open", status=s) for s in ("working", "input_required")
        }
        if open_now == {"working": 1, "input_required": 1}:
            break
        assert asyncio.get_running_loop().time() < deadline, open_now
        await asyncio.sleep(0.2)

    (key,) = parked["inputRequests"]
    await raw.result("tasks/update", {"taskId": asked, "inputResponses": {key: ACCEPT}})
    await wait_for(raw, asked, "completed")
    await raw.result("tasks/cancel", {"taskId": held})
    await wait_for(raw, held, "cancelled")
    _, unknown = await raw.call("tasks/get", {"taskId": "x" * 32})
    assert unknown["error"]["code"] == -32602
    _, undeclared = await raw.call("tasks/get", {"taskId": held}, declare_tasks=False)
    assert undeclared["error"]["code"] == -32021
    _, bad_arguments = await raw.call("tools/call", {"name": "quick", "arguments": {"n": "many"}})
    assert bad_arguments["result"]["isError"] is True  # FastMCP's answer to bad arguments

    final = await scrape(port)
    created = "mcp_tasks_created_total"
    assert final.value(created, tool="quick", outcome="created") == QUICK_TASKS
    assert final.value(created, tool="quick", outcome="rejected") == 1
    assert final.value(created, tool="hold", outcome="created") == 1
    finished = "mcp_tasks_finished_total"
    assert final.value(finished, tool="quick", status="completed") == QUICK_TASKS
    assert final.value(finished, tool="asker", status="completed") == 1
    assert final.value(finished, tool="hold", status="cancelled") == 1
    assert final.value(finished, status="failed") == 0
    assert final.value("mcp_input_required_seconds_count", tool="asker") == 1
    assert final.value("mcp_input_required_seconds_sum", tool="asker") > 0
    latency = "mcp_request_duration_seconds_count"
    assert final.value(latency, method="tasks/get") == CountingMcp.gets
    assert final.value(latency, method="tasks/update") == 1
    assert final.value(latency, method="tasks/cancel") == 1
    assert final.value(latency, method="tools/call") == QUICK_TASKS + 2 + 1
    assert final.value("mcp_errors_total", method="tasks/get", code="-32602") == 1
    assert final.value("mcp_errors_total", method="tasks/get", code="-32021") == 1
    assert final.value("mcp_errors_total", method="tools/call") == 0  # not a JSON-RPC error
    # Temporal's own metrics, from the same runtime: this worker's completed workflows.
    assert final.value("temporal_workflow_completed_total", task_queue=raw_queue(final)) >= 4
    assert "temporal_activity_execution_latency_bucket" in final.names()


def raw_queue(scrape: Scrape) -> str:
    """The task queue label of the MCP workflows' metrics (this test's queue)."""
    (queue,) = {
        s.labels["task_queue"] for s in scrape.samples if s.name == "mcp_tasks_finished_total"
    }
    return queue


async def test_the_guards_real_hits_and_rejections_are_counted(
    served: tuple[CountingMcp, int, asyncio.Event],
) -> None:
    """A key sent twice (by header, then in ``_meta``) and a second ``hold`` over its limit
    of 1: the idempotency and quota guards' own events reach the scrape."""
    raw, port, gate = served
    key = "metrics-key"
    params = {"name": "quick", "arguments": {"n": 7}}
    _, first = await raw.call("tools/call", params, headers={"Idempotency-Key": key})
    assert "result" in first, first
    again = await raw.result("tools/call", {**params, "_meta": {IDEMPOTENCY_KEY_META: key}})
    assert again["taskId"] == first["result"]["taskId"]
    held = await raw.result("tools/call", {"name": "hold", "arguments": {}})
    assert_over_quota(await try_create(raw, "hold"))
    gate.set()
    await wait_for(raw, held["taskId"], "completed")

    final = await scrape(port)
    created = "mcp_tasks_created_total"
    assert final.value(created, tool="quick", outcome="created") == 1
    assert final.value(created, tool="quick", outcome="idempotent_hit") == 1
    assert final.value("mcp_idempotent_hits_total", tool="quick") == 1
    assert final.value(created, tool="hold", outcome="created") == 1
    assert final.value(created, tool="hold", outcome="quota_rejected") == 1
    assert final.value("mcp_quota_rejections_total", tool="hold") == 1
    assert final.value("mcp_errors_total", method="tools/call", code="-32001") == 1


def test_metrics_port_and_a_client_of_ones_own_are_exclusive() -> None:
    with pytest.raises(ValueError, match="metrics_port or client"):
        TemporalTasks(client=object(), metrics_port=9464)  # type: ignore[arg-type]


def test_no_port_means_no_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(metrics.METRICS_PORT_ENV, raising=False)
    assert TemporalTasks()._options.metrics is None
    monkeypatch.setenv(metrics.METRICS_PORT_ENV, "9464")
    monkeypatch.setenv(metrics.METRICS_HOST_ENV, "0.0.0.0")
    assert TemporalTasks()._options.metrics == metrics.MetricsEndpoint("0.0.0.0", 9464)
    assert TemporalTasks(metrics_port=9465)._options.metrics == metrics.MetricsEndpoint(
        "0.0.0.0", 9465
    )
