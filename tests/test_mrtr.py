"""MRTR first, then the task (conformance ``tasks-mrtr-composition``).

For a tool listed in ``mrtr_first_tools``, a question its first leg asks comes
back on the ``tools/call`` itself as an ``InputRequiredResult``; the second
round carries the answer and gets the task, which already existed (durably)
since round one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

import mcp_types
import pytest
from fastmcp import Context, FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import McpTasksPlugin, TemporalTasks
from tests.ports import run_server_async
from tests.wire import TASKS, RawMcp

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def build(extension: TemporalTasks) -> FastMCP:
    verifier = StaticTokenVerifier(
        tokens={
            "alice": {"client_id": "app", "sub": "alice", "scopes": []},
            "bob": {"client_id": "app", "sub": "bob", "scopes": []},
        }
    )
    mcp = FastMCP("mrtr", auth=verifier)
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def welcome(ctx: Context) -> str:
        answer = (ctx.input_responses or {}).get("user_name")
        if not isinstance(answer, mcp_types.ElicitResult) or not answer.content:
            return mcp_types.InputRequiredResult(  # type: ignore[return-value]
                input_requests={
                    "user_name": mcp_types.ElicitRequest(
                        params=mcp_types.ElicitRequestFormParams(
                            message="Your name?", requested_schema=NAME_SCHEMA
                        )
                    )
                }
            )
        return f"Welcome, {answer.content['name']}!"

    @mcp.tool(task=True)
    async def other(ctx: Context) -> str:
        return "other"

    @mcp.tool(task=True)
    async def instant() -> str:
        return "right away"

    @mcp.tool(task=True)
    async def slow() -> str:
        await asyncio.sleep(3)
        return "eventually"

    return mcp


async def serve(
    temporal_tasks: Callable[..., TemporalTasks], window: timedelta
) -> AsyncIterator[str]:
    extension = temporal_tasks(
        mrtr_first_tools={"welcome", "other", "instant", "slow"}, mrtr_window=window
    )
    async with run_server_async(build(extension)) as server_url:
        yield server_url


@pytest.fixture
async def url(temporal_tasks: Callable[..., TemporalTasks]) -> AsyncIterator[str]:
    """A window no first leg here comes near (they answer in milliseconds), so a
    loaded machine cannot turn an expected question into a task."""
    async for server_url in serve(temporal_tasks, timedelta(seconds=30)):
        yield server_url


@pytest.fixture
async def short_window_url(temporal_tasks: Callable[..., TemporalTasks]) -> AsyncIterator[str]:
    """A window shorter than ``slow``'s leg, which load only makes longer."""
    async for server_url in serve(temporal_tasks, timedelta(seconds=1)):
        yield server_url


async def read_until(raw: RawMcp, task_id: str, reached: Callable[[dict], bool]) -> dict:
    """``tasks/get`` until ``reached``; the bound is generous (each read and each leg can
    take seconds on a loaded machine), as only a failure waits it out."""
    deadline = asyncio.get_running_loop().time() + 60
    while not reached(task := await raw.result("tasks/get", {"taskId": task_id})):
        assert asyncio.get_running_loop().time() < deadline, task
        await asyncio.sleep(0.05)
    return task


async def round_one(raw: RawMcp) -> dict:
    result = await raw.result("tools/call", {"name": "welcome", "arguments": {}})
    assert result["resultType"] == "input_required", result
    return result


def round_two(tool: str, key: str, name: str, request_state: str) -> dict:
    """The params of a second-round ``tools/call``: the answer plus the echoed state."""
    return {
        "name": tool,
        "arguments": {},
        "inputResponses": {key: {"action": "accept", "content": {"name": name}}},
        "requestState": request_state,
    }


async def test_the_question_comes_first_and_the_task_second(url: str) -> None:
    alice = RawMcp(url, bearer="alice")
    first = await round_one(alice)
    assert "taskId" not in first
    (key,) = first["inputRequests"]
    assert first["inputRequests"][key]["method"] == "elicitation/create"
    second = await alice.result(
        "tools/call", round_two("welcome", key, "Alice", first["requestState"])
    )
    assert second["resultType"] == "task"
    assert "requestState" not in second and "inputRequests" not in second
    task = await read_until(alice, second["taskId"], lambda task: task["status"] == "completed")
    assert task["result"]["content"][0]["text"] == "Welcome, Alice!"


async def test_a_client_that_cannot_answer_gets_the_parked_task_not_the_question(
    url: str,
) -> None:
    """No ``elicitation`` declared: the question is never sent on ``tools/call``; the
    client gets the task, parked, saying what it lacks (any client of alice may answer)."""
    alice = RawMcp(url, bearer="alice")
    no_elicitation = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}}
    created = await alice.result(
        "tools/call", {"name": "welcome", "arguments": {}, "_meta": no_elicitation}
    )
    assert created["resultType"] == "task" and created["status"] == "input_required"
    assert "did not declare support for (elicitation)" in created["statusMessage"]
    parked = await alice.result("tasks/get", {"taskId": created["taskId"]})
    assert list(parked["inputRequests"]) == ["1.user_name"]
    await alice.result("tasks/cancel", {"taskId": created["taskId"]})


async def test_an_early_result_is_returned_inline(url: str) -> None:
    alice = RawMcp(url, bearer="alice")
    inline = await alice.result("tools/call", {"name": "instant", "arguments": {}})
    assert inline["resultType"] == "complete"
    assert inline["content"] == [{"type": "text", "text": "right away"}]


async def test_a_leg_still_running_at_the_end_of_the_window_becomes_a_task(
    short_window_url: str,
) -> None:
    alice = RawMcp(short_window_url, bearer="alice")
    tasked = await alice.result("tools/call", {"name": "slow", "arguments": {}})
    assert tasked["resultType"] == "task" and tasked["status"] == "working"


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda state: state[:-5] + "xxxxx", id="altered"),
        pytest.param(lambda state: "forged-state", id="forged"),
    ],
)
async def test_a_forged_or_altered_request_state_is_rejected(url: str, tamper) -> None:  # type: ignore[no-untyped-def]
    alice = RawMcp(url, bearer="alice")
    first = await round_one(alice)
    (key,) = first["inputRequests"]
    _, body = await alice.call(
        "tools/call", round_two("welcome", key, "Mallory", tamper(first["requestState"]))
    )
    # FastMCP's request-state boundary rejects it before any task is touched.
    assert body["error"]["code"] == -32602
    assert body["error"]["message"] == "Invalid or expired requestState"
    retry = await alice.result(
        "tools/call", round_two("welcome", key, "Alice", first["requestState"])
    )
    assert retry["resultType"] == "task"


@pytest.mark.parametrize(("caller", "tool"), [("bob", "welcome"), ("alice", "other")])
async def test_a_request_state_only_works_for_its_caller_and_tool(
    url: str, caller: str, tool: str
) -> None:
    alice = RawMcp(url, bearer="alice")
    first = await round_one(alice)
    (key,) = first["inputRequests"]
    _, body = await RawMcp(url, bearer=caller).call(
        "tools/call", round_two(tool, key, "Eve", first["requestState"])
    )
    assert body.get("error", {}).get("code") == -32602, body
    # Alice's task still waits for Alice's answer.
    retry = await alice.result(
        "tools/call", round_two("welcome", key, "Alice", first["requestState"])
    )
    assert retry["resultType"] == "task"


async def test_with_no_worker_in_time_the_client_gets_the_task(
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """The first round waits on the task's history, not on a worker: none came, so a task."""
    extension = temporal_tasks(
        run_worker=False, mrtr_first_tools={"welcome"}, mrtr_window=timedelta(milliseconds=500)
    )
    mcp = build(extension)
    async with run_server_async(mcp) as server_url:
        alice = RawMcp(server_url, bearer="alice")
        tasked = await alice.result("tools/call", {"name": "welcome", "arguments": {}})
        assert tasked["resultType"] == "task" and tasked["status"] == "working"
        async with Worker(temporal_client, task_queue=task_queue, plugins=[McpTasksPlugin(mcp)]):
            task = await read_until(
                alice, tasked["taskId"], lambda task: task["status"] != "working"
            )
        assert task["status"] == "input_required"
        assert [r["method"] for r in task["inputRequests"].values()] == ["elicitation/create"]
