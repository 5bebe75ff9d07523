"""Durable synchronous calls with real processes: a killed front end, a stdio server.

- The front end holding a waiting call is killed (SIGKILL); the task finishes
  on the worker anyway, and the client's retry with the same
  ``Idempotency-Key``, on a new front end, attaches to it and answers its
  result: the body ran once (its run files count).
- The worker running the leg is killed mid-wait: the leg runs again on another
  worker and the waiting request answers its result.
- A front end that hosts the worker is drained (SIGTERM) mid-wait: it stops
  listening at once, keeps the waiting request for its ``drain_grace_s`` while
  its worker still runs, so a task that ends within it is answered before the
  process exits 0. A task still running at the end of the grace is not
  cancelled and its call is not cut: it is answered ``-32002`` with its task id
  (on 2026-07-28 and on 2025-11-25 alike), the drain hands its leg back, the
  next front end's worker runs it, and the client's retry with the same
  ``Idempotency-Key`` there attaches and answers its result (raw JSON-RPC and a
  FastMCP ``Client`` on 2026-07-28, a FastMCP ``Client`` on 2025-11-25: a sync
  call's anonymous key does not belong to the session that died with the front end).
- A host's local server over stdio (a FastMCP ``Client`` without the tasks
  extension, ``StdioTransport``): the call is a workflow and answers its
  result, on 2025-11-25 and on 2026-07-28; ``notifications/cancelled`` over
  stdio cancels the task on both.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import mcp_types
import pytest
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from mcp.shared.exceptions import MCPError
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.worker import Worker

from fastmcp_temporal import DevServer, McpTasksPlugin
from fastmcp_temporal.activities.tool_leg import HANDED_BACK_ERROR_TYPE
from fastmcp_temporal.client_wire import IDEMPOTENCY_KEY_HEADER, SERVER_DRAINING
from tests import helpers
from tests.helpers import ROOT, eventually, kill, spawn, spawn_worker
from tests.plain_calls import PlainClient, count_workflows, wait_status, workflows
from tests.ports import free_port, run_server_async
from tests.processes.crash_server import mcp as crash_server
from tests.processes.running import Process
from tests.test_chaos import _wait_for_http
from tests.wire import RawMcp

SERVER = "tests.processes.sync_server"


def front_end(address: str, task_queue: str) -> tuple[str, list[str]]:
    port = free_port()
    return f"http://127.0.0.1:{port}/mcp", [SERVER, address, task_queue, "http", str(port)]


async def test_a_retry_after_the_front_end_died_attaches_to_the_task(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    worker = spawn_worker(temporal_server.address, task_queue, "tests.processes.crash_server")
    url, args = front_end(temporal_server.address, task_queue)
    first = spawn(*args)
    second = None
    try:
        await _wait_for_http(url)
        params = {"name": "record_and_wait", "arguments": {"marker_dir": str(tmp_path)}}
        key = {IDEMPOTENCY_KEY_HEADER: "sync-retry-1"}
        waiting = asyncio.create_task(
            RawMcp(url).call("tools/call", params, declare_tasks=False, headers=key)
        )
        await eventually(lambda: any(tmp_path.glob("run-*")), timeout=60)
        kill(first)  # mid-wait: the request dies with its front end, the task does not
        with pytest.raises(Exception):  # noqa: B017 - whatever the dead connection raises
            await waiting

        url, args = front_end(temporal_server.address, task_queue)
        second = spawn(*args)
        await _wait_for_http(url)
        retry = asyncio.create_task(
            RawMcp(url).call("tools/call", params, declare_tasks=False, headers=key)
        )
        await asyncio.sleep(1)
        assert not retry.done()  # attached: it waits for the same task
        (tmp_path / "release").write_text("")
        _, body = await asyncio.wait_for(retry, timeout=60)
        assert body["result"]["content"][0]["text"].startswith("finished in ")
        assert len(list(tmp_path.glob("run-*"))) == 1  # the body ran once
        assert await count_workflows(temporal_client, task_queue, 1) == 1
    finally:
        kill(first)
        if second is not None:
            kill(second)
        kill(worker)


async def test_a_killed_worker_only_delays_the_answer(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    worker = spawn_worker(temporal_server.address, task_queue, "tests.processes.crash_server")
    try:
        served = helpers.front_end(temporal_client, task_queue, crash_server)
        async with run_server_async(served) as url, PlainClient(url) as client:
            params = {"marker_dir": str(tmp_path)}
            call = asyncio.create_task(client.call_tool("record_and_wait", params))
            await eventually(lambda: len(list(tmp_path.glob("run-*"))) == 1, timeout=60)
            kill(worker)
            (tmp_path / "release").write_text("")
            async with Worker(
                temporal_client,
                task_queue=task_queue,
                plugins=[McpTasksPlugin(crash_server)],
                max_heartbeat_throttle_interval=timedelta(seconds=1),
            ):
                result = await asyncio.wait_for(call, timeout=60)
    finally:
        kill(worker)
    assert result.data == f"finished in {os.getpid()}"  # the leg's second run, here
    assert len(list(tmp_path.glob("run-*"))) == 2


def stdio(temporal_server: DevServer, task_queue: str) -> StdioTransport:
    return StdioTransport(
        sys.executable, ["-m", SERVER, temporal_server.address, task_queue, "stdio"], cwd=str(ROOT)
    )


async def test_over_stdio_the_call_is_a_workflow_and_cancels_with_the_request(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    async with PlainClient(stdio(temporal_server, task_queue), mode="legacy") as client:
        params = {"marker_dir": str(tmp_path)}
        call = asyncio.create_task(client.call_tool_mcp("record_and_wait", params))
        await eventually(lambda: any(tmp_path.glob("run-*")), timeout=60)
        (tmp_path / "release").write_text("")
        result = await asyncio.wait_for(call, timeout=60)
        assert json.loads(result.model_dump_json())["content"][0]["text"].startswith("finished")
        assert await count_workflows(temporal_client, task_queue, 1) == 1

        napping = asyncio.create_task(client.call_tool("nap", {"seconds": 60}))
        assert await count_workflows(temporal_client, task_queue, 2) == 2
        await asyncio.sleep(1)
        napping.cancel()
        with pytest.raises(asyncio.CancelledError):
            await napping
        await wait_status(temporal_client, task_queue, "cancelled", tool="nap")


async def test_over_stdio_on_2026_07_28_the_call_is_a_workflow_and_cancels_with_the_request(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """The modern wire over stdio (``server/discover``, each request stamped in ``_meta``),
    where ``notifications/cancelled`` exists (over HTTP it does not: a closed stream is all
    a 2026-07-28 client has, and it leaves the task running)."""
    async with PlainClient(stdio(temporal_server, task_queue), mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        call = asyncio.create_task(
            client.call_tool_mcp(RECORD_AND_WAIT, {"marker_dir": str(tmp_path)})
        )
        await eventually(lambda: any(tmp_path.glob("run-*")), timeout=60)
        assert not call.done()  # the open call waits for the task
        (tmp_path / "release").write_text("")
        result = await asyncio.wait_for(call, timeout=60)
    (block,) = result.content
    assert isinstance(block, mcp_types.TextContent) and not result.is_error
    handle = await only_task(temporal_client, task_queue)
    # Answered with the result the workflow ended with (the server's own worker ran it).
    assert block.text == await completed_text(handle)
    assert block.text.startswith("finished in ") and block.text != f"finished in {os.getpid()}"

    async with PlainClient(stdio(temporal_server, task_queue), mode="auto") as client:
        napping = asyncio.create_task(client.call_tool("nap", {"seconds": 60}))
        assert await count_workflows(temporal_client, task_queue, 2) == 2
        await asyncio.sleep(1)  # the front end is in the call's wait, not its start
        napping.cancel()
        with pytest.raises(asyncio.CancelledError):
            await napping
        await wait_status(temporal_client, task_queue, "cancelled", tool="nap")


# -- a front end that hosts the worker, drained (SIGTERM) mid-wait ---------------------------------

RECORD_AND_WAIT = "record_and_wait"


async def hosting_front_end(
    address: str,
    task_queue: str,
    logs: Path,
    name: str,
    grace_s: float | None = None,
    serving: str = "http-worker",
) -> tuple[Process, str]:
    """A front end with the worker in its process, serving; ``grace_s``: its drain's grace;
    ``serving``: ``http-worker`` (``mcp.run``) or ``uvicorn-worker`` (``uvicorn app:app``)."""
    port = free_port()
    grace = [] if grace_s is None else [str(grace_s)]
    process = Process(
        name,
        [sys.executable, "-m", SERVER, address, task_queue, serving, str(port), *grace],
        {},
        logs / f"{name}.log",
    )
    await process.wait_for_port(port)
    return process, f"http://127.0.0.1:{port}/mcp"


def markers(runs: Path, kind: str) -> list[tuple[int, str]]:
    """``(pid, task id)`` of each ``kind`` marker: ``run`` (a run began), ``done`` (one ended)."""
    return sorted((int(p.name.split("-")[1]), p.read_text()) for p in runs.glob(f"{kind}-*"))


async def only_task(temporal_client: TemporalClient, task_queue: str) -> WorkflowHandle[Any, Any]:
    assert await count_workflows(temporal_client, task_queue, 1) == 1
    (workflow_id,) = await workflows(temporal_client, task_queue)
    return temporal_client.get_workflow_handle(workflow_id)


async def raw_call(url: str, key: str | None, runs: Path) -> dict[str, Any]:
    """A plain 2026-07-28 ``tools/call`` (answered as JSON): its JSON-RPC response."""
    params = {"name": RECORD_AND_WAIT, "arguments": {"marker_dir": str(runs)}}
    raw = RawMcp(url)
    headers = {} if key is None else {IDEMPOTENCY_KEY_HEADER: key}
    _, body = await raw.call("tools/call", params, declare_tasks=False, headers=headers)
    return body


async def fastmcp_call(url: str, key: str, runs: Path, mode: str) -> dict[str, Any]:
    """A FastMCP ``Client`` without the tasks extension: its result, or its error, as sent."""
    transport = StreamableHttpTransport(url, headers={IDEMPOTENCY_KEY_HEADER: key})
    async with PlainClient(transport, mode=mode) as client:  # type: ignore[arg-type]
        try:
            result = await client.call_tool_mcp(RECORD_AND_WAIT, {"marker_dir": str(runs)})
        except MCPError as err:
            return {"error": err.error.model_dump(mode="json", exclude_none=True)}
    return {"result": result.model_dump(by_alias=True, mode="json", exclude_none=True)}


async def modern_call(url: str, key: str, runs: Path) -> dict[str, Any]:
    return await fastmcp_call(url, key, runs, "auto")  # 2026-07-28


async def legacy_call(url: str, key: str, runs: Path) -> dict[str, Any]:
    return await fastmcp_call(url, key, runs, "legacy")  # 2025-11-25


def answered_text(body: dict[str, Any]) -> str:
    """The one text block of the ``CallToolResult`` in ``body["result"]``."""
    result = mcp_types.CallToolResult.model_validate(body["result"])
    (block,) = result.content
    assert isinstance(block, mcp_types.TextContent) and not result.is_error, body
    return block.text


async def completed_text(handle: WorkflowHandle[Any, Any]) -> str:
    """The text of the result the task's workflow ended with (what ``tasks/get`` inlines)."""
    view = await handle.result()
    assert view["status"] == "completed", view
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
    return answered_text(view)


@pytest.mark.parametrize("serving", ["http-worker", "uvicorn-worker"])
async def test_a_drained_front_end_answers_a_call_whose_task_ends_within_its_grace(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
    serving: str,
) -> None:
    """Its grace here is a minute (``drain_grace_s``). Served by ``mcp.run`` or as
    ``uvicorn app:app`` serves it (there uvicorn has SIGTERM before the lifespan starts):
    the same drain, and exit 0 (``uvicorn app:app`` exited by the signal before)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    front, url = await hosting_front_end(
        temporal_server.address, task_queue, tmp_path, "front-end", grace_s=60, serving=serving
    )
    try:
        waiting = asyncio.create_task(raw_call(url, "drain-finish-1", runs))
        await eventually(lambda: len(markers(runs, "run")) == 1, timeout=60)
        front.signal(signal.SIGTERM)
        # It stopped listening (a load balancer moves on) and keeps the open request.
        await eventually(lambda: refuses_connections(url), timeout=30)
        assert not waiting.done()
        (runs / "release").write_text("")
        body = await asyncio.wait_for(waiting, timeout=60)
        assert await front.exit_code(timeout=60) == 0
    finally:
        front.stop()
    # Answered by the drained process, with the result its task's workflow ended with.
    assert answered_text(body) == f"finished in {front.pid}"
    assert await completed_text(await only_task(temporal_client, task_queue)) == answered_text(body)
    (task_id,) = {t for _, t in markers(runs, "run")}
    assert markers(runs, "run") == markers(runs, "done") == [(front.pid, task_id)]  # run once


async def test_a_drained_call_without_a_key_attaches_when_made_again(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """A host that sends no ``Idempotency-Key`` (most do not): the drained call's task is
    recorded as undelivered (``reattach``), so the ``-32002`` is ``retryable`` and says to
    call again with the same arguments; the same call on the next front end attaches to
    the task and answers its result, the body finished once."""
    runs = tmp_path / "runs"
    runs.mkdir()
    address = temporal_server.address
    old, old_url = await hosting_front_end(address, task_queue, tmp_path, "old", grace_s=1)
    new: Process | None = None
    new_pid = 0
    try:
        waiting = asyncio.create_task(raw_call(old_url, None, runs))
        await eventually(lambda: len(markers(runs, "run")) == 1, timeout=60)
        new, new_url = await hosting_front_end(address, task_queue, tmp_path, "new")
        new_pid = new.pid
        old.signal(signal.SIGTERM)
        error = (await asyncio.wait_for(waiting, timeout=60))["error"]
        assert await old.exit_code(timeout=60) == 0
        handle = await only_task(temporal_client, task_queue)
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        retry = asyncio.create_task(raw_call(new_url, None, runs))
        (runs / "release").write_text("")
        body = await asyncio.wait_for(retry, timeout=60)
    finally:
        old.stop()
        if new is not None:
            new.stop()
    (task_id,) = {t for _, t in markers(runs, "run")}
    assert error["code"] == SERVER_DRAINING
    assert error["data"] == {"taskId": task_id, "retryable": True}
    assert "call again with the same arguments" in error["message"]
    assert answered_text(body) == await completed_text(handle)
    assert await count_workflows(temporal_client, task_queue, 1) == 1
    assert [t for _, t in markers(runs, "done")] == [task_id]  # the body finished once
    assert new_pid in {pid for pid, _ in markers(runs, "done")}


def refuses_connections(url: str) -> bool:
    """Whether nothing listens at ``url`` any more (a load balancer's check fails)."""
    try:
        httpx.post(url, json={}, timeout=5)
    except httpx.ConnectError:
        return True
    except httpx.RemoteProtocolError:
        # Accepted just before uvicorn closed its socket, then dropped unanswered as it
        # shut down (seen once in CI): still listening at connect time, so look again.
        return False
    return False


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(raw_call, id="2026-07-28-raw-json-rpc"),
        pytest.param(modern_call, id="2026-07-28-fastmcp-client"),
        pytest.param(legacy_call, id="2025-11-25-fastmcp-client"),
    ],
)
async def test_a_drained_front_end_hands_the_call_over_to_the_next_one(
    call: Any,
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """A rolling deploy: the next front end is up, the old one gets SIGTERM mid-wait and
    a grace of 2 s. The call is answered ``-32002`` -- its task goes on, named by id --
    and the retry with its key on the new front end answers the task's result."""
    runs = tmp_path / "runs"
    runs.mkdir()
    address = temporal_server.address
    old, old_url = await hosting_front_end(address, task_queue, tmp_path, "old", grace_s=2)
    new: Process | None = None
    new_pid = 0
    try:
        drained = asyncio.create_task(call(old_url, "drain-over-1", runs))
        await eventually(lambda: len(markers(runs, "run")) == 1, timeout=60)
        new, new_url = await hosting_front_end(address, task_queue, tmp_path, "new")
        new_pid = new.pid
        old.signal(signal.SIGTERM)
        error = (await asyncio.wait_for(drained, timeout=60))["error"]
        assert await old.exit_code(timeout=60) == 0
        handle = await only_task(temporal_client, task_queue)
        # Not cancelled with the request: its leg was handed back and runs on the new worker.
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        await eventually(lambda: len(markers(runs, "run")) == 2, timeout=60)

        retry = asyncio.create_task(call(new_url, "drain-over-1", runs))
        (runs / "release").write_text("")
        body = await asyncio.wait_for(retry, timeout=60)
        completed = await completed_text(handle)
    finally:
        old.stop()
        if new is not None:
            new.stop()
    (task_id,) = {t for _, t in markers(runs, "run")}
    assert error["code"] == SERVER_DRAINING
    assert error["data"] == {"taskId": task_id, "retryable": True}
    assert task_id in error["message"] and "Idempotency-Key" in error["message"]
    assert answered_text(body) == completed == f"finished in {new_pid}"
    assert await count_workflows(temporal_client, task_queue, 1) == 1
    # Two runs of the one task: the drained one (cut short, handed back), the new worker's.
    assert markers(runs, "run") == sorted([(old.pid, task_id), (new_pid, task_id)])
    assert markers(runs, "done") == [(new_pid, task_id)]  # the body finished once
    started = [
        event.activity_task_started_event_attributes
        for event in (await handle.fetch_history()).events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    assert [s.attempt for s in started] == [2]
    assert started[0].last_failure.application_failure_info.type == HANDED_BACK_ERROR_TYPE
