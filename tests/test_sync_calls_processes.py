"""Durable synchronous calls with real processes: a killed front end, a stdio server.

- The front end holding a waiting call is killed (SIGKILL); the task finishes
  on the worker anyway, and the client's retry with the same
  ``Idempotency-Key``, on a new front end, attaches to it and answers its
  result: the body ran once (its run files count).
- The worker running the leg is killed mid-wait: the leg runs again on another
  worker and the waiting request answers its result.
- A host's local server over stdio (a FastMCP ``Client`` without the tasks
  extension, ``StdioTransport``): the call is a workflow and answers its
  result; ``notifications/cancelled`` over stdio cancels the task.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from fastmcp.client.transports import StdioTransport
from fastmcp.utilities.tests import run_server_async
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import DevServer, McpTasksPlugin
from fastmcp_temporal.client_wire import IDEMPOTENCY_KEY_HEADER
from fastmcp_temporal.server.embedded.devserver import free_port
from tests import helpers
from tests.helpers import ROOT, eventually, kill, spawn, spawn_worker
from tests.processes.crash_server import mcp as crash_server
from tests.test_chaos import _wait_for_http
from tests.test_sync_calls import PlainClient, count_workflows
from tests.test_sync_calls_lifecycle import wait_status
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
