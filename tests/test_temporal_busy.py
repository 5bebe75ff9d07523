"""Temporal too slow to answer: a retryable ``-32001``, never "Internal server error".

A real dev server is made "too slow" the honest way: the extension's
``query_timeout`` (the bound on each Temporal call of a ``tasks/*`` request) is
one microsecond, so every such call runs out of time inside Temporal's client.
These tests send the server calls whose deadline has passed before they arrive,
so they get a dev server of their own, apart from the session's.

A loaded Temporal also answers "Namespace default is not found." when its
namespace lookup times out (``server.core.temporal_errors``). That is the same
busy moment, not a missing task: a front end asking a namespace that does not
exist gets Temporal's real answer, and must say "ask again", never "no such task".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

import pytest
import pytest_asyncio
from fastmcp import Client, FastMCP
from mcp.shared.exceptions import MCPError
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowExecutionStatus
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.protocol.temporal_busy import temporal_busy_as_error
from tests.ports import run_server_async
from tests.wire import RawMcp

TOO_SHORT = timedelta(microseconds=1)


def build(extension: TemporalTasks) -> FastMCP:
    mcp = FastMCP("busy")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def wait_a_while() -> str:
        await asyncio.sleep(60)
        return "done"

    return mcp


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def temporal_client(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[TemporalClient]:
    """This module's own Temporal (``temporal_tasks`` and the tests use it in place of
    the session's)."""
    dev = await DevServer.start(data_dir=tmp_path_factory.mktemp("busy-temporal"), ui=False)
    try:
        yield await TemporalClient.connect(dev.address, data_converter=pydantic_data_converter)
    finally:
        dev.stop()


@pytest.fixture
async def url(temporal_tasks: Callable[..., TemporalTasks]) -> AsyncIterator[str]:
    async with run_server_async(build(temporal_tasks(query_timeout=TOO_SHORT))) as server_url:
        yield server_url


@pytest.mark.parametrize(
    ("method", "params", "outcome"),
    [
        ("tasks/get", {}, "nothing changed; ask again"),
        (
            "tasks/update",
            {"inputResponses": {"k": {"action": "accept", "content": {}}}},
            "the answers may or may not have been delivered; sending them again is safe",
        ),
        (
            "tasks/cancel",
            {},
            "the cancellation may or may not have been recorded; cancelling again is safe",
        ),
    ],
)
async def test_a_tasks_request_temporal_cannot_answer_in_time_is_a_retryable_error(
    url: str, temporal_client: TemporalClient, method: str, params: dict, outcome: str
) -> None:
    raw = RawMcp(url)
    created = await raw.result("tools/call", {"name": "wait_a_while", "arguments": {}})
    status, body = await raw.call(method, {"taskId": created["taskId"], **params})
    assert status == 200
    error = body["error"]
    assert error["code"] == -32001, error
    assert error["message"].startswith("Temporal did not answer in time (")
    assert error["message"].endswith(f"): {outcome}")
    assert error["data"] == {"retryable": True}
    assert "Traceback" not in error["message"]
    # The task is as it was: still running, not cancelled.
    handle = temporal_client.get_workflow_handle(f"mcp-anon-{created['taskId']}")
    description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.RUNNING
    history = await handle.fetch_history()
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED not in {
        event.event_type for event in history.events
    }
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED not in {
        event.event_type for event in history.events
    }
    await handle.terminate("test over")


async def test_the_client_helper_asks_again_until_its_own_deadline(
    temporal_tasks: Callable[..., TemporalTasks], caplog: pytest.LogCaptureFixture
) -> None:
    mcp = build(temporal_tasks(query_timeout=TOO_SHORT))
    with caplog.at_level(logging.WARNING, logger="fastmcp_temporal.server.protocol.temporal_busy"):
        async with Client(mcp) as client:
            task = await call_tool_task(client, "wait_a_while", {})
            with pytest.raises(TimeoutError):
                await task.wait(timeout=1.5)
    refused = [r for r in caplog.records if "did not answer tasks/get in time" in r.getMessage()]
    # It asked again instead of giving up at the first refusal.
    assert len(refused) >= 2


def test_a_call_that_may_have_started_a_task_is_not_retryable() -> None:
    """``tools/call``: Temporal away mid-start may have started a task the client cannot name."""
    away = RPCError("connection refused", RPCStatusCode.UNAVAILABLE, b"")
    with pytest.raises(MCPError) as raised, temporal_busy_as_error("tools/call"):
        raise away
    assert raised.value.error.code == -32001
    assert raised.value.error.message == (
        "Temporal did not answer in time (connection refused): the task may or may not have "
        "been started; calling again may start a second one"
    )
    assert raised.value.error.data == {"retryable": False}


def test_a_refusal_that_is_not_about_time_stays_what_it_is() -> None:
    refused = RPCError("bad query", RPCStatusCode.INVALID_ARGUMENT, b"")
    with pytest.raises(RPCError) as raised, temporal_busy_as_error("tasks/get"):
        raise refused
    assert raised.value is refused


@pytest.fixture
async def lost(temporal_client: TemporalClient) -> TemporalClient:
    """A client of this module's Temporal, on a namespace it does not have."""
    return await TemporalClient.connect(
        temporal_client.service_client.config.target_host,
        namespace="no-such-namespace",
        data_converter=pydantic_data_converter,
    )


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tasks/get", {}),
        ("tasks/update", {"inputResponses": {"k": {"action": "accept", "content": {}}}}),
        ("tasks/cancel", {}),
    ],
)
async def test_a_namespace_temporal_cannot_find_is_busy_not_a_missing_task(
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    lost: TemporalClient,
    method: str,
    params: dict,
) -> None:
    """A task created in ``default``, asked through a front end whose namespace lookups
    fail: "ask again" (``tasks/update`` delivering nothing, ``tasks/cancel`` recording
    nothing), never "no such task" and never a silent success."""
    async with run_server_async(build(temporal_tasks())) as server_url:
        created = await RawMcp(server_url).result(
            "tools/call", {"name": "wait_a_while", "arguments": {}}
        )
    front_end = build(temporal_tasks(client=lost, run_worker=False))
    async with run_server_async(front_end) as server_url:
        status, body = await RawMcp(server_url).call(
            method, {"taskId": created["taskId"], **params}
        )
    assert status == 200
    error = body["error"]
    assert error["code"] == -32001, error
    assert "Namespace no-such-namespace is not found." in error["message"]
    assert error["data"] == {"retryable": True}
    handle = temporal_client.get_workflow_handle(f"mcp-anon-{created['taskId']}")
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    kinds = {event.event_type for event in (await handle.fetch_history()).events}
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED not in kinds
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED not in kinds
    await handle.terminate("test over")


async def test_a_call_temporal_refused_for_its_namespace_started_nothing_and_may_be_retried(
    temporal_tasks: Callable[..., TemporalTasks], lost: TemporalClient
) -> None:
    """Temporal looks the namespace up before it starts anything: calling again is safe."""
    async with run_server_async(build(temporal_tasks(client=lost, run_worker=False))) as url:
        status, body = await RawMcp(url).call(
            "tools/call", {"name": "wait_a_while", "arguments": {}}
        )
    assert status == 200
    error = body["error"]
    assert error["code"] == -32001, error
    assert error["message"] == (
        "Temporal did not answer in time (Namespace no-such-namespace is not found.): "
        "no task was started; calling again is safe"
    )
    assert error["data"] == {"retryable": True}
