"""The SEP-2663 wire, byte for byte, over streamable HTTP.

Each test states one requirement of the tasks extension and checks it on the
raw JSON-RPC answer of a real server whose tasks run on the session's Temporal.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

import pytest
from fastmcp import FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.utilities.tasks import TaskConfig
from fastmcp.utilities.types import get_cached_typeadapter
from mcp.shared.exceptions import MCPError
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from tests.ports import run_server_async
from tests.wire import TASKS, RawMcp

ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
GATE = asyncio.Event()


def build_server(extension: TemporalTasks, **server_options: object) -> FastMCP:
    mcp = FastMCP("wire", **server_options)  # type: ignore[arg-type]
    mcp.add_extension(extension)

    @mcp.tool(task=TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=250)))
    async def hello(name: str) -> str:
        return f"Hello, {name}!"

    @mcp.tool(task=TaskConfig(mode="required"))
    async def only_task() -> str:
        return "done"

    @mcp.tool(task=False)
    async def never_task() -> str:
        return "inline"

    @mcp.tool(task=True)
    async def wait_for_gate() -> str:
        await asyncio.wait_for(GATE.wait(), 30)
        return "opened"

    @mcp.tool(task=True)
    async def protocol_fault() -> str:
        raise MCPError(code=-32050, message="upstream said no", data={"retry": False})

    return mcp


@pytest.fixture
async def raw(temporal_tasks: Callable[..., TemporalTasks]) -> AsyncIterator[RawMcp]:
    async with run_server_async(build_server(temporal_tasks())) as url:
        yield RawMcp(url)


async def create(raw: RawMcp, tool: str, arguments: dict[str, object] | None = None) -> dict:
    result = await raw.result("tools/call", {"name": tool, "arguments": arguments or {}})
    assert result["resultType"] == "task", result
    return result


async def poll_until(raw: RawMcp, task_id: str, *statuses: str, timeout: float = 20) -> dict:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        task = await raw.result("tasks/get", {"taskId": task_id})
        if task["status"] in statuses:
            return task
        assert asyncio.get_running_loop().time() < deadline, f"stuck in {task}"
        await asyncio.sleep(0.05)


async def test_discover_advertises_the_extension_with_empty_settings(raw: RawMcp) -> None:
    result = await raw.result("server/discover", {})
    assert result["capabilities"]["extensions"][TASKS] == {}
    assert "tasks" not in result["capabilities"]


async def test_create_task_result_is_flat_and_complete(raw: RawMcp) -> None:
    created = await create(raw, "hello", {"name": "Ada"})
    assert set(created) - {"_meta"} == {
        "resultType",
        "taskId",
        "status",
        "createdAt",
        "lastUpdatedAt",
        "ttlMs",
        "pollIntervalMs",
    }
    assert created["status"] == "working"
    assert ISO.match(created["createdAt"]) and created["lastUpdatedAt"] == created["createdAt"]
    assert created["ttlMs"] == 900_000
    assert created["pollIntervalMs"] == 200  # adaptive; the tool's explicit 250 ms is its ceiling
    assert len(created["taskId"]) >= 22  # ≥ 128 bits of URL-safe base64


async def test_task_is_durable_before_create_returns(raw: RawMcp) -> None:
    created = await create(raw, "hello", {"name": "Ada"})
    task = await raw.result("tasks/get", {"taskId": created["taskId"]})
    assert task["resultType"] == "complete"
    assert task["taskId"] == created["taskId"]
    assert task["createdAt"] == created["createdAt"]


async def test_completed_task_inlines_the_tool_result(raw: RawMcp) -> None:
    created = await create(raw, "hello", {"name": "Ada"})
    task = await poll_until(raw, created["taskId"], "completed")
    assert task["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert task["result"]["structuredContent"] == {"result": "Hello, Ada!"}
    assert task["result"].get("isError") in (None, False)
    assert "error" not in task and "inputRequests" not in task
    assert "io.modelcontextprotocol/related-task" not in task["result"].get("_meta", {})


async def test_last_updated_at_is_the_last_state_change_not_now(raw: RawMcp) -> None:
    created = await create(raw, "hello", {"name": "Ada"})
    done = await poll_until(raw, created["taskId"], "completed")
    await asyncio.sleep(0.05)
    again = await raw.result("tasks/get", {"taskId": created["taskId"]})
    assert again["lastUpdatedAt"] == done["lastUpdatedAt"]
    assert done["lastUpdatedAt"] >= done["createdAt"]


async def test_protocol_error_fails_the_task_with_the_json_rpc_error(raw: RawMcp) -> None:
    created = await create(raw, "protocol_fault")
    task = await poll_until(raw, created["taskId"], "failed")
    assert task["error"] == {
        "code": -32050,
        "message": "upstream said no",
        "data": {"retry": False},
    }
    assert task["statusMessage"] == "upstream said no"
    assert "result" not in task


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_tasks_methods_require_the_extension_on_the_request(raw: RawMcp, method: str) -> None:
    created = await create(raw, "hello", {"name": "Ada"})
    params: dict[str, object] = {"taskId": created["taskId"]}
    if method == "tasks/update":
        params["inputResponses"] = {}
    status, body = await raw.call(method, params, declare_tasks=False)
    assert status == 400
    assert body["error"]["code"] == -32021
    assert body["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_mismatched_mcp_name_header_is_rejected(raw: RawMcp, method: str) -> None:
    created = await create(raw, "wait_for_gate")
    params: dict[str, object] = {"taskId": created["taskId"]}
    if method == "tasks/update":
        params["inputResponses"] = {}
    status, body = await raw.call(method, params, headers={"Mcp-Name": "someone-else"})
    assert body["error"]["code"] == -32020
    assert status == 400
    task = await raw.result("tasks/get", {"taskId": created["taskId"]})
    assert task["status"] == "working"  # the rejected cancel changed nothing
    await raw.result("tasks/cancel", {"taskId": created["taskId"]})


@pytest.mark.parametrize(
    "task_id",
    ["", "nope", "x" * 10_000, "../../etc/passwd", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "é" * 30],
)
@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_unknown_or_malformed_task_ids_are_not_found(
    raw: RawMcp, method: str, task_id: str
) -> None:
    params: dict[str, object] = {"taskId": task_id}
    if method == "tasks/update":
        params["inputResponses"] = {"k": {"action": "accept", "content": {}}}
    _, body = await raw.call(method, params)
    assert body["error"]["code"] == -32602
    assert body["error"]["message"].endswith("not found")
    assert "Traceback" not in str(body)


async def test_required_tool_without_opt_in_is_missing_capability(raw: RawMcp) -> None:
    status, body = await raw.call(
        "tools/call", {"name": "only_task", "arguments": {}}, declare_tasks=False
    )
    assert status == 400
    assert body["error"]["code"] == -32021
    assert body["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}


async def test_optional_tool_without_opt_in_answers_with_its_result(raw: RawMcp) -> None:
    """A durable synchronous call (``tests/test_sync_calls.py``): the result, not a task."""
    _, body = await raw.call(
        "tools/call", {"name": "hello", "arguments": {"name": "Ada"}}, declare_tasks=False
    )
    assert body["result"]["resultType"] == "complete"
    assert body["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}]


async def test_forbidden_tool_never_becomes_a_task(raw: RawMcp) -> None:
    result = await raw.result("tools/call", {"name": "never_task", "arguments": {}})
    assert result["resultType"] == "complete"
    assert "taskId" not in result


async def test_legacy_task_param_is_ignored(raw: RawMcp) -> None:
    _, body = await raw.call(
        "tools/call",
        {"name": "hello", "arguments": {"name": "Ada"}, "task": {"ttl": 1000}},
        declare_tasks=False,
    )
    assert body["result"]["resultType"] == "complete"


@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
async def test_removed_methods_are_method_not_found(raw: RawMcp, method: str) -> None:
    _, body = await raw.call(method, {"taskId": "x" * 32})
    assert body["error"]["code"] == -32601


async def test_invalid_arguments_are_an_error_and_start_no_workflow(
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    async with run_server_async(build_server(temporal_tasks())) as url:
        raw = RawMcp(url)
        _, body = await raw.call("tools/call", {"name": "hello", "arguments": {"name": 1, "x": 2}})
        assert body["result"]["isError"] is True
        assert "taskId" not in body["result"]
        _, body = await raw.call("tools/call", {"name": "hello", "arguments": {}})
        assert body["result"]["isError"] is True
        # A valid call afterwards: once it is visible, it is the only workflow on the queue.
        created = await create(raw, "hello", {"name": "Ada"})
    query = f"TaskQueue = '{task_queue}'"
    deadline = asyncio.get_running_loop().time() + 60  # visibility lags more under load
    while not (ids := [w.id async for w in temporal_client.list_workflows(query)]):
        assert asyncio.get_running_loop().time() < deadline, "the valid call never showed"
        await asyncio.sleep(0.1)
    assert len(ids) == 1 and ids[0].endswith(created["taskId"])


async def test_strict_input_validation_is_honoured_up_front(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    server = build_server(temporal_tasks(), strict_input_validation=True)

    @server.tool(task=True)
    async def double(n: int) -> int:
        return 2 * n

    async with run_server_async(server) as url:
        raw = RawMcp(url)
        _, lax = await raw.call("tools/call", {"name": "double", "arguments": {"n": "2"}})
        assert lax["result"]["isError"] is True and "taskId" not in lax["result"]
        created = await create(raw, "double", {"n": 2})
        task = await poll_until(raw, created["taskId"], "completed")
        assert task["result"]["structuredContent"] == {"result": 4}


async def test_argument_validation_is_built_once_per_tool_not_per_call(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    """Creating tasks must not fill FastMCP's shared validator cache (nor rebuild one each time)."""
    server = build_server(temporal_tasks())

    @server.tool(task=True)
    async def square(n: int) -> int:
        return n * n

    async with run_server_async(server) as url:
        raw = RawMcp(url)
        first = await create(raw, "square", {"n": 1})
        await poll_until(raw, first["taskId"], "completed")  # its leg warmed FastMCP's caches
        cached_before = get_cached_typeadapter.cache_info().currsize
        created = [await create(raw, "square", {"n": n}) for n in range(2, 12)]
        assert get_cached_typeadapter.cache_info().currsize == cached_before
        task = await poll_until(raw, created[-1]["taskId"], "completed")
        assert task["result"]["structuredContent"] == {"result": 121}


async def test_another_callers_task_is_indistinguishable_from_an_unknown_one(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    verifier = StaticTokenVerifier(
        tokens={
            "alice-token": {"client_id": "app", "sub": "alice", "scopes": []},
            "bob-token": {"client_id": "app", "sub": "bob", "scopes": []},
        }
    )
    server = build_server(temporal_tasks(), auth=verifier)
    async with run_server_async(server) as url:
        alice, bob = RawMcp(url, bearer="alice-token"), RawMcp(url, bearer="bob-token")
        created = await create(alice, "wait_for_gate")
        task_id = created["taskId"]
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            params: dict[str, object] = {"taskId": task_id, "inputResponses": {}}
            if method != "tasks/update":
                params.pop("inputResponses")
            _, stolen = await bob.call(method, params)
            _, unknown = await bob.call(method, {**params, "taskId": "Z" * len(task_id)})
            assert stolen["error"]["code"] == unknown["error"]["code"] == -32602
            assert stolen["error"]["message"].replace(task_id, "ID") == unknown["error"][
                "message"
            ].replace("Z" * len(task_id), "ID")
        still = await alice.result("tasks/get", {"taskId": task_id})
        assert still["status"] == "working"  # bob's cancel did not reach it
        await alice.result("tasks/cancel", {"taskId": task_id})
