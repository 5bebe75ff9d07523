"""Client values that cannot be stored, and answers that do not validate.

A lone UTF-16 surrogate (``"\\ud800"`` in JSON) is valid JSON and a valid Python
string, but no valid UTF-8: a task holding one could not be encoded. In tool
arguments or in a ``tasks/update`` answer it is the client's error: ``-32602``
naming the field, with nothing started or changed -- over streamable HTTP
(raw JSON-RPC) and over FastMCP's in-memory transport. A client's mistake is
not the server's error: a real server process's log shows no ERROR and no
traceback for it. An answer that does not validate says which field is wrong and how.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from mcp.shared.exceptions import MCPError
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import call_tool_task, update_task
from fastmcp_temporal.testing import EmbeddedServer
from tests.helpers import declares_elicitation
from tests.ports import free_port, run_server_async
from tests.processes.running import Process
from tests.raw_tasks import (
    ACCEPT,
    assert_clean,
    build_server,
    create,
    wait_for,
    workflow_ids_on,
)
from tests.wire import RawMcp

BuildTasks = Callable[..., TemporalTasks]

LONE = "\ud800"


def tasks_server(temporal_tasks: BuildTasks) -> FastMCP:
    mcp = build_server(temporal_tasks())

    @mcp.tool(task=True)
    async def label(tags: dict[str, str]) -> int:
        return len(tags)

    return mcp


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        pytest.param("done", {"data": f"a{LONE}b"}, "arguments.data", id="in-a-value"),
        pytest.param("label", {"tags": {"ok": "x", "k": LONE}}, "arguments.tags.k", id="nested"),
        pytest.param("label", {"tags": {f"bad{LONE}": "x"}}, "arguments.tags", id="in-a-key"),
    ],
)
async def test_unstorable_arguments_are_invalid_params_over_http_and_start_nothing(
    temporal_tasks: BuildTasks,
    temporal_client: TemporalClient,
    task_queue: str,
    tool: str,
    arguments: dict[str, Any],
    field: str,
) -> None:
    async with run_server_async(tasks_server(temporal_tasks)) as url:
        raw = RawMcp(url)
        status, body = await raw.call("tools/call", {"name": tool, "arguments": arguments})
        valid = await create(raw, "done", {"data": "fine"})
        await wait_for(raw, valid, "completed")
    assert body.get("error", {}).get("code") == -32602, (status, body)
    assert status < 500
    message = body["error"]["message"]
    assert field in message and "surrogate" in message, message
    assert_clean(body)
    ids = await workflow_ids_on(temporal_client, task_queue, valid)
    assert len(ids) == 1 and ids[0].endswith(valid), ids


async def test_unstorable_input_leaves_no_error_in_a_real_servers_log(
    temporal_server: EmbeddedServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """``mcp.run`` in its own process, as users run it: its whole output is read.

    A lone surrogate in a tool argument and in a task id are answered ``-32602``
    and create nothing; the log holds no ERROR line and no traceback (at most a
    WARNING line: a client's mistake is not the server's error).
    """
    port = free_port()
    args = ["--name", "bad-input", "--port", str(port), "--task-queue", task_queue]
    args += ["--data-dir", str(tmp_path / "data")]
    server = Process(
        "bad-input",
        [sys.executable, "-m", "tests.processes.embedded_server", *args],
        {"TEMPORAL_ADDRESS": temporal_server.address, "COLUMNS": "1000"},
        tmp_path / "server.log",
    )
    try:
        await server.wait_for_port(port, timeout=90)
        raw = RawMcp(f"http://127.0.0.1:{port}/mcp")
        _, created = await raw.call(
            "tools/call", {"name": "nap", "arguments": {"seconds": 0, "tag": f"a{LONE}"}}
        )
        _, read = await raw.call("tasks/get", {"taskId": f"a{LONE}"})
        valid = await create(raw, "nap", {"seconds": 0, "tag": "fine"})
        await wait_for(raw, valid, "completed")
    finally:
        server.stop()
    assert created.get("error", {}).get("code") == -32602, created
    assert "arguments.tag" in created["error"]["message"], created
    assert read.get("error", {}).get("code") == -32602, read
    ids = await workflow_ids_on(temporal_client, task_queue, valid)
    assert len(ids) == 1 and ids[0].endswith(valid), ids
    log = server.output()
    assert "Starting MCP server 'bad-input'" in log, "the log is the server's: " + log[-2000:]
    problems = [
        line
        for line in log.splitlines()
        if "ERROR" in line or "Traceback" in line or "surrogates not allowed" in line
    ]
    assert problems == [], log[-5000:]


async def test_an_unstorable_answer_is_invalid_params_over_http_and_changes_nothing(
    temporal_tasks: BuildTasks,
) -> None:
    async with run_server_async(tasks_server(temporal_tasks)) as url:
        raw = RawMcp(url)
        task_id = await create(raw, "confirm")
        parked = await wait_for(raw, task_id, "input_required")
        (key,) = parked["inputRequests"]
        answer = {"action": "accept", "content": {"note": LONE}}
        status, body = await raw.call(
            "tasks/update", {"taskId": task_id, "inputResponses": {key: answer}}
        )
        assert body.get("error", {}).get("code") == -32602, (status, body)
        assert f'inputResponses["{key}"].content.note' in body["error"]["message"], body
        assert_clean(body)
        # Everything but pollIntervalMs, which is computed from the time of the read.
        still = await raw.result("tasks/get", {"taskId": task_id})
        assert {**still, "pollIntervalMs": None} == {**parked, "pollIntervalMs": None}
        await raw.result("tasks/update", {"taskId": task_id, "inputResponses": {key: ACCEPT}})
        final = await wait_for(raw, task_id, "completed")
    assert final["result"]["structuredContent"] == {"result": "confirmed"}


async def test_unstorable_values_are_invalid_params_in_memory(temporal_tasks: BuildTasks) -> None:
    """The same answers on FastMCP's in-memory transport, which carries Python strings as is."""
    async with Client(
        tasks_server(temporal_tasks), elicitation_handler=declares_elicitation
    ) as client:
        with pytest.raises(MCPError) as created:
            await call_tool_task(client, "done", {"data": LONE})
        assert created.value.code == -32602
        assert "arguments.data" in created.value.error.message

        task = await call_tool_task(client, "confirm", {})
        parked = await task.wait(state="input_required", timeout=60)
        (key,) = parked.input_requests or {}
        with pytest.raises(MCPError) as answered:
            await update_task(
                client.session, task.task_id, {key: {"action": "accept", "content": {"n": LONE}}}
            )
        assert answered.value.code == -32602
        assert f'inputResponses["{key}"].content.n' in answered.value.error.message
        still = await task.status()
        assert still.status == "input_required" and still.input_requests == parked.input_requests
        await task.cancel()


@pytest.mark.parametrize(
    ("answer", "field", "problem"),
    [
        pytest.param({"action": "maybe"}, ".action", "Input should be 'accept'", id="enum"),
        pytest.param({"action": "accept", "content": 5}, ".content", "dictionary", id="type"),
        pytest.param({}, ".action", "Field required", id="missing"),
        pytest.param("accept", "", "expected an object", id="not-an-object"),
    ],
)
async def test_a_bad_answer_names_the_field_and_the_problem(
    temporal_tasks: BuildTasks, answer: Any, field: str, problem: str
) -> None:
    async with run_server_async(tasks_server(temporal_tasks)) as url:
        raw = RawMcp(url)
        task_id = await create(raw, "confirm")
        parked = await wait_for(raw, task_id, "input_required")
        (key,) = parked["inputRequests"]
        _, body = await raw.call(
            "tasks/update", {"taskId": task_id, "inputResponses": {key: answer}}
        )
        await raw.result("tasks/cancel", {"taskId": task_id})
    message = body["error"]["message"]
    assert body["error"]["code"] == -32602
    assert f'inputResponses["{key}"]{field}: ' in message, message
    assert problem in message, message
    assert "validation error" not in message and "errors.pydantic.dev" not in message
