"""Operating tasks: the ``tasks`` command, per-tool TTL and routing, TTL expiry,
configuration the Temporal way, and one OpenTelemetry trace per task.

The command runs as a real process against the session's Temporal; the trace
is recorded in a process of its own (the global tracer provider can be set
once per process).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from temporalio import activity
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowExecutionStatus
from temporalio.worker import Worker

from fastmcp_temporal import DevServer, McpTasksPlugin, TemporalTasks
from fastmcp_temporal.client import call_tool_task, get_task
from fastmcp_temporal.server.core.codec import AesGcmCodec
from fastmcp_temporal.server.tasks import starter, task_records
from fastmcp_temporal.server.tasks.engine import mint_task_id, workflow_id_for
from fastmcp_temporal.server.tasks.starter import ToolOptions
from fastmcp_temporal.server.temporal import connection
from fastmcp_temporal.workflows.models import WORKFLOW_TYPE, TaskStart
from tests import forks
from tests.ports import run_server_async
from tests.processes.running import BIN, ROOT
from tests.raw_tasks import wait_for
from tests.wire import RawMcp


def cli(address: str, *args: str) -> subprocess.CompletedProcess[str]:
    return forks.run(
        [str(BIN / "fastmcp-temporal"), *args, "--address", address],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


async def listed(address: str, *filters: str, task_id: str) -> dict[str, Any]:
    """``tasks list --json`` shows ``task_id`` (visibility is eventually consistent)."""
    for _ in range(50):
        done = await asyncio.to_thread(cli, address, "tasks", "list", "--json", *filters)
        assert done.returncode == 0, done.stderr
        for line in done.stdout.splitlines():
            row = json.loads(line)
            if row["taskId"] == task_id:
                return row
        await asyncio.sleep(0.2)
    raise AssertionError(f"tasks list {filters} never showed {task_id}")


async def test_tasks_command_lists_shows_and_cancels(
    temporal_server: DevServer, temporal_tasks: Callable[..., TemporalTasks]
) -> None:
    mcp = FastMCP("operated")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def nightly_import(source: str) -> str:
        await asyncio.sleep(3600)
        return source

    address = temporal_server.address
    async with Client(mcp) as client:
        task = await call_tool_task(client, "nightly_import", {"source": "s3://bucket"})
        row = await listed(address, "--tool", "nightly_import", task_id=task.task_id)
        assert row["tool"] == "nightly_import"
        assert row["workflowId"].endswith(task.task_id)

        shown = await asyncio.to_thread(cli, address, "tasks", "show", task.task_id)
        assert shown.returncode == 0, shown.stderr
        seen = (await get_task(client.session, task.task_id)).model_dump(
            by_alias=True, exclude_none=True
        )
        detailed = json.loads(shown.stdout)
        for field in ("taskId", "status", "createdAt", "ttlMs"):
            assert detailed[field] == seen[field], field
        # Adaptive: the interval grows between the two reads (show came first), up to 5 s.
        assert detailed["pollIntervalMs"] <= seen["pollIntervalMs"] <= 5000

        cancelled = await asyncio.to_thread(cli, address, "tasks", "cancel", row["workflowId"])
        assert cancelled.returncode == 0, cancelled.stderr
        assert (await task.wait(timeout=30)).status == "cancelled"
        await listed(
            address, "--tool", "nightly_import", "--status", "cancelled", task_id=task.task_id
        )

    missing = await asyncio.to_thread(
        cli, address, "tasks", "show", "no-such-task-id-0000", "--scan", "5"
    )
    assert missing.returncode == 1 and "not found" in missing.stderr


async def test_a_tool_gets_its_own_ttl_and_leg_queue(
    temporal_client: TemporalClient, temporal_tasks: Callable[..., TemporalTasks], task_queue: str
) -> None:
    gpu_queue = f"{task_queue}-gpu"
    mcp = FastMCP("routed")
    mcp.add_extension(
        temporal_tasks(tools={"render": ToolOptions(task_queue=gpu_queue, ttl_ms=7_200_000)})
    )

    @mcp.tool(task=True)
    async def render() -> str:
        return activity.info().task_queue

    @mcp.tool(task=True)
    async def plain() -> str:
        return activity.info().task_queue

    gpu_worker = Worker(
        temporal_client,
        task_queue=gpu_queue,
        plugins=[McpTasksPlugin(mcp)],
        max_heartbeat_throttle_interval=timedelta(seconds=1),
    )
    async with Client(mcp) as client, gpu_worker:
        rendered = await call_tool_task(client, "render", {})
        other = await call_tool_task(client, "plain", {})
        assert rendered.create_result.ttl_ms == 7_200_000
        assert other.create_result.ttl_ms == 900_000
        assert (await rendered.result()).data == gpu_queue
        assert (await other.result()).data == task_queue


async def test_a_task_still_running_at_its_ttl_is_ended(
    temporal_tasks: Callable[..., TemporalTasks], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workflow's execution timeout (TTL + grace, the grace 0 here) ends a task still
    running. No worker takes this one: with a worker, a leg's own deadline
    (``createdAt`` + TTL) precedes that timeout by as long as the start call took, so
    on a slow machine the leg's expiry could end the task first, with its own message.
    """
    monkeypatch.setattr(starter, "EXPIRY_GRACE", timedelta(0))  # end exactly at the TTL
    mcp = FastMCP("expiring")
    mcp.add_extension(temporal_tasks(ttl_ms=2000, run_worker=False))

    @mcp.tool(task=True)
    async def too_long() -> str:
        await asyncio.sleep(3600)
        return "never"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "too_long", {})
        final = await task.wait(timeout=30)
    assert final.status == "failed"
    assert final.error == {
        "code": -32000,
        "message": "Task expired: still running at the end of its TTL",
    }


def test_connection_settings_come_from_envconfig_and_arguments_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(tmp_path / "absent.toml"))
    assert connection.resolve().address is None  # nothing configured: embedded

    monkeypatch.setenv("TEMPORAL_ADDRESS", "my-ns.a1b2c.tmprl.cloud:7233")
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "my-ns.a1b2c")
    monkeypatch.setenv("TEMPORAL_API_KEY", "secret-key")
    cloud = connection.resolve()
    assert (cloud.address, cloud.namespace, cloud.api_key) == (
        "my-ns.a1b2c.tmprl.cloud:7233",
        "my-ns.a1b2c",
        "secret-key",
    )
    assert cloud.tls and "secret-key" not in cloud.describe()
    assert connection.resolve(namespace="other").namespace == "other"

    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY"):
        monkeypatch.delenv(name)
    profiles = tmp_path / "temporal.toml"
    profiles.write_text(
        '[profile.prod]\naddress = "temporal.internal:7233"\nnamespace = "mcp"\n'
        "[profile.prod.tls]\n"
    )
    prod = connection.resolve(profile="prod", config_file=profiles)
    assert (prod.address, prod.namespace, bool(prod.tls)) == ("temporal.internal:7233", "mcp", True)
    local = connection.resolve(profile="prod", config_file=profiles, address="127.0.0.1:7233")
    assert local.address == "127.0.0.1:7233" and local.namespace == "mcp"


async def test_one_trace_from_tools_call_into_the_leg_and_no_poll_noise(
    temporal_server: DevServer, task_queue: str
) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    probe = await asyncio.to_thread(
        forks.run,
        [sys.executable, "-m", "tests.processes.otel_probe", temporal_server.address, task_queue],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    spans = [json.loads(line) for line in probe.stdout.splitlines() if line.startswith("{")]
    names = [span["name"] for span in spans]
    calls = [s for s in spans if s["name"].startswith("tools/call")]  # client and server
    (call_trace,) = {s["trace"] for s in calls}
    same_trace = {s["name"] for s in spans if s["trace"] == call_trace}
    assert {
        "StartWorkflow:McpTask:shout",
        "RunWorkflow:McpTask:shout",
        "StartActivity:shout",
        "RunActivity:shout",
    } <= same_trace, names
    assert not [n for n in names if "Query" in n], "tasks/get polls leave no Temporal spans"
    polls = [s for s in spans if s["name"].startswith("tasks/get")]
    assert polls and all(s["trace"] != call_trace for s in polls)


async def test_the_plugin_carries_the_converter_and_the_codec(
    temporal_server: DevServer, task_queue: str
) -> None:
    """A user's own worker: the plugin on ``Client.connect``, nothing else configured."""
    key = base64.b64encode(os.urandom(32)).decode()
    mcp = FastMCP("own-worker")

    @mcp.tool(task=True)
    async def sealed(text: str) -> str:
        return text[::-1]

    mcp.add_extension(
        TemporalTasks(
            address=temporal_server.address,
            task_queue=task_queue,
            run_worker=False,
            encryption_key=key,
        )
    )
    worker_client = await TemporalClient.connect(
        temporal_server.address, plugins=[McpTasksPlugin(mcp, encryption_key=key)]
    )
    codec = worker_client.data_converter.payload_codec
    assert isinstance(codec, AesGcmCodec) and codec.encrypts
    async with Client(mcp) as client, Worker(worker_client, task_queue=task_queue):
        task = await call_tool_task(client, "sealed", {"text": "abc"})
        assert (await task.result()).data == "cba"


async def test_tasks_started_as_plain_mcptask_still_run(
    temporal_client: TemporalClient, temporal_tasks: Callable[..., TemporalTasks], task_queue: str
) -> None:
    """Tasks started before the tool joined the workflow type keep working."""
    mcp = FastMCP("legacy")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def legacy(n: int) -> int:
        return n * 2

    task_id = mint_task_id()
    start = TaskStart(
        task_id=task_id,
        tool_name="legacy",
        arguments={"n": 21},
        created_at=datetime.now(UTC),
        ttl_ms=60_000,
        poll_interval_ms=100,
    )
    async with Client(mcp) as client:
        handle = await temporal_client.start_workflow(
            WORKFLOW_TYPE, start, id=workflow_id_for(task_id, None), task_queue=task_queue
        )
        await handle.result()
        done = await get_task(client.session, task_id)
    assert done.status == "completed"
    assert done.result is not None and done.result["structuredContent"] == {"result": 42}


async def test_an_expired_task_is_not_found_by_get_update_and_cancel(
    temporal_tasks: Callable[..., TemporalTasks], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``createdAt + ttlMs`` a finished task does not exist for clients: the three
    methods give the same ``-32602`` as an id that names nothing (none acks).

    The grace that keeps a finished task readable after its TTL is taken away only
    once the test has seen the task completed: a loaded machine can take longer
    than the 1.5 s TTL to run it and to answer the first read.
    """
    mcp = FastMCP("expired")
    mcp.add_extension(temporal_tasks(ttl_ms=1500))

    @mcp.tool(task=True)
    async def quick() -> str:
        return "done"

    async with run_server_async(mcp) as url:
        raw = RawMcp(url)
        created = await raw.result("tools/call", {"name": "quick", "arguments": {}})
        task_id = created["taskId"]
        expires = datetime.fromisoformat(created["createdAt"]) + timedelta(milliseconds=1500)
        assert (await wait_for(raw, task_id, "completed"))["taskId"] == task_id
        monkeypatch.setattr(task_records, "FINISHED_GRACE", timedelta(0))
        await asyncio.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.2)
        answers = {
            method: await raw.call(method, params)
            for method, params in (
                ("tasks/get", {"taskId": task_id}),
                ("tasks/update", {"taskId": task_id, "inputResponses": {"1.x": {}}}),
                ("tasks/cancel", {"taskId": task_id}),
            )
        }
    for method, (status, body) in answers.items():
        assert body.get("error") == {"code": -32602, "message": f"Task {task_id} not found"}, (
            method,
            status,
            body,
        )


async def test_tasks_cancel_on_a_finished_task_says_so_and_fails(
    temporal_server: DevServer, temporal_tasks: Callable[..., TemporalTasks]
) -> None:
    mcp = FastMCP("finished")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def quick() -> str:
        return "done"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "quick", {})
        assert (await task.wait(timeout=30)).status == "completed"
        workflow_id = workflow_id_for(task.task_id, None)
        done = await asyncio.to_thread(cli, temporal_server.address, "tasks", "cancel", workflow_id)
        assert (await task.status()).status == "completed"
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.stderr.strip() == (
        f"Task {task.task_id!r} already finished (completed): not cancelled"
    )


def test_task_ids_never_start_with_a_dash() -> None:
    """One id in 64 would, from ``token_urlsafe``: it would read as an option on a command line."""
    assert not any(mint_task_id().startswith("-") for _ in range(5000))


async def test_show_and_cancel_take_a_task_id_that_starts_with_a_dash(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    temporal_tasks: Callable[..., TemporalTasks],
    task_queue: str,
) -> None:
    """Tasks minted before ids avoided a leading ``-`` are still operated by their id."""
    mcp = FastMCP("dashed")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def slow() -> str:
        await asyncio.sleep(3600)
        return "never"

    task_id = "-" + mint_task_id()[1:]
    start = TaskStart(
        task_id=task_id,
        tool_name="slow",
        arguments={},
        created_at=datetime.now(UTC),
        # Alive until the test cancels it: two CLI runs can outlast a minute on a loaded machine.
        ttl_ms=3_600_000,
        poll_interval_ms=100,
    )
    async with Client(mcp):
        handle = await temporal_client.start_workflow(
            WORKFLOW_TYPE, start, id=workflow_id_for(task_id, None), task_queue=task_queue
        )
        address = temporal_server.address
        shown = await asyncio.to_thread(
            forks.run,
            [str(BIN / "fastmcp-temporal"), "tasks", "show", "--address", address, task_id],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["taskId"] == task_id
        cancelled = await asyncio.to_thread(cli, address, "tasks", "cancel", task_id)
        assert cancelled.returncode == 0, cancelled.stderr
        # Cancelling the running leg takes workflow tasks: seconds each on a loaded machine.
        deadline = asyncio.get_running_loop().time() + 60
        description = await handle.describe()
        while description.status == WorkflowExecutionStatus.RUNNING:
            assert asyncio.get_running_loop().time() < deadline, "never left RUNNING"
            await asyncio.sleep(0.1)
            description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.CANCELED
