"""A task whose body keeps failing says so, and a plain call waiting on it is told.

The mistakes a newcomer makes in the first hour, made as they make them, through a
real FastMCP client over HTTP: a workflow tool whose activity was left out of
``workflow_tool(..., activities=[...])``; a workflow tool whose workflow task fails
on every attempt (what a sync LangGraph router does); a function tool whose legs a
worker without the tool keeps failing; a tool whose legs go to a queue no worker
polls; a server whose tasks no worker runs at all. Each time the waiting call ends
with ``-32004`` naming the task and the cause after ``stuck_call_timeout_s`` (small
here), ``tasks/get`` says the same, and the task goes on: a deploy that fixes it
finishes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from fastmcp import Client, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from mcp.shared.exceptions import MCPError
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import DevServer, McpTasksPlugin, TemporalTasks, ToolOptions, workflow_tool
from fastmcp_temporal.client import TaskState, call_tool_task, get_task
from fastmcp_temporal.client_wire import IDEMPOTENCY_KEY_META, TASK_STUCK
from fastmcp_temporal.server.tasks import stuck_bodies
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.server.tasks.stuck_bodies import StuckBodies
from fastmcp_temporal.server.tasks.task_records import describe_raw
from fastmcp_temporal.testing import TEST_QUERY_TIMEOUT
from tests import forks
from tests.plain_calls import PlainClient, progress_sink
from tests.ports import run_server_async
from tests.processes.running import BIN, ROOT
from tests.processes.stuck_workflows import OrderAgent, OrderDesk, SyncRouterAgent, order_status
from tests.test_ui import NAMESPACE, current_details

BuildTasks = Callable[..., TemporalTasks]
#: The tests' bound on a stuck wait (the default is 30 s), and their keepalive: one
#: comes before the call ends.
STUCK_AFTER_S = 3.0
KEEPALIVE_S = 1.0


def agents(extension: TemporalTasks, *, with_activities: bool) -> FastMCP:
    """The workflow tools, their activity forgotten (or, after the fix, not)."""
    mcp = FastMCP("stuck")
    mcp.add_extension(extension)
    mcp.add_tool(workflow_tool(OrderAgent, activities=[order_status] if with_activities else []))
    mcp.add_tool(workflow_tool(SyncRouterAgent))
    mcp.add_tool(workflow_tool(OrderDesk))  # runs OrderAgent as its child

    @mcp.tool(task=TaskConfig(mode="optional"))
    async def crunch(n: int) -> str:
        return f"crunched {n}"

    return mcp


@contextlib.asynccontextmanager
async def served(server: FastMCP) -> AsyncIterator[tuple[PlainClient, Client[Any]]]:
    """A host's plain client and a task-augmented one, on one server over HTTP."""
    async with (
        run_server_async(server) as url,
        PlainClient(url) as plain,
        Client(url) as tasks,
    ):
        yield plain, tasks


async def stuck_call(
    plain: PlainClient, tool: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None
) -> tuple[MCPError, list[str]]:
    """The error a plain call of ``tool`` ends with (it must end with one), and the
    messages of the progress notifications (keepalives) it heard before."""
    seen, on_progress = progress_sink()
    with pytest.raises(MCPError) as ended:
        await plain.call_tool_mcp(tool, arguments, progress_handler=on_progress, meta=meta)
    return ended.value, [message or "" for _, _, message in seen]


def task_of(error: MCPError) -> str:
    assert error.error.code == TASK_STUCK, error.error
    assert isinstance(error.error.data, dict)
    task_id = error.error.data["taskId"]
    assert isinstance(task_id, str)
    assert task_id in error.error.message
    return task_id


async def test_a_forgotten_activity_is_named_not_registered_and_a_fix_finishes_the_task(
    temporal_tasks: BuildTasks, task_queue: str
) -> None:
    """Temporal's own meaning (the type, the queue, "not registered"), never our leg's
    input error; the host hears it in its keepalives and its error, and its retry with
    the same idempotency key gets the result once the fix is deployed."""
    options = {"stuck_call_timeout_s": STUCK_AFTER_S, "keepalive_s": KEEPALIVE_S}
    key = {IDEMPOTENCY_KEY_META: f"order-42-{uuid.uuid4()}"}
    async with served(agents(temporal_tasks(**options), with_activities=False)) as (plain, tasks):
        error, heard = await stuck_call(plain, "order_agent", {"order": 42}, meta=key)
        task_id = task_of(error)
        assert error.error.data == {"taskId": task_id, "retryable": True}
        message = error.error.message
        assert "'order_status'" in message and "not registered" in message, message
        assert f"task queue {task_queue!r}" in message, message
        assert "LegRequest" not in message, message
        assert any("not registered" in line for line in heard), heard
        state = await get_task(tasks.session, task_id)
        assert state.status == "working"
        assert state.status_message is not None
        assert "'order_status'" in state.status_message and "not registered" in state.status_message
    # The task kept retrying: the fixed server's worker takes the activity and finishes it,
    # and the host's retry with the same key gets its result (the body ran in that task).
    fixed = agents(temporal_tasks(**options), with_activities=True)
    async with served(fixed) as (plain, tasks):
        retried = await plain.call_tool_mcp("order_agent", {"order": 42}, meta=key)
        finished = await until_ended(tasks, task_id)
    assert retried.content[0].text == "order 42 shipped"  # type: ignore[union-attr]
    assert finished.status == "completed", finished
    assert finished.result is not None
    assert finished.result["content"][0]["text"] == "order 42 shipped"


async def test_a_failure_two_workflows_down_is_the_tasks_status_message(
    temporal_tasks: BuildTasks,
) -> None:
    """The body's own child workflow (any depth the task owns) is read too."""
    options = {"stuck_call_timeout_s": STUCK_AFTER_S}
    async with served(agents(temporal_tasks(**options), with_activities=False)) as (plain, tasks):
        error, _ = await stuck_call(plain, "order_desk", {"order": 7})
        state = await get_task(tasks.session, task_of(error))
    assert "Activity 'order_status' of workflow OrderAgent fails (attempt " in error.error.message
    assert state.status == "working"
    assert state.status_message is not None
    assert state.status_message.startswith("Activity 'order_status' of workflow OrderAgent fails")


async def test_a_body_whose_workflow_task_fails_on_every_attempt_says_so(
    temporal_tasks: BuildTasks, temporal_server: DevServer
) -> None:
    """What a sync LangGraph router does: ``run_in_executor`` in the workflow's loop. The
    host, ``tasks/get`` and an operator's ``fastmcp-temporal tasks show`` all hear it."""
    address = temporal_server.address
    options = {"stuck_call_timeout_s": STUCK_AFTER_S, "keepalive_s": KEEPALIVE_S}
    async with served(agents(temporal_tasks(**options), with_activities=True)) as (plain, tasks):
        error, heard = await stuck_call(plain, "sync_router_agent", {"question": "where is 42?"})
        task_id = task_of(error)
        message = error.error.message
        assert "Workflow SyncRouterAgent fails its workflow task (attempt " in message, message
        assert "NotImplementedError" in message, message
        assert any("SyncRouterAgent fails" in line for line in heard), heard
        state = await get_task(tasks.session, task_id)
        ui = await what_the_ui_shows(temporal_server, workflow_id_for(task_id, None))
        shown = await asyncio.to_thread(
            forks.run,
            [str(BIN / "fastmcp-temporal"), "tasks", "show", task_id, "--address", address],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert state.status == "working"
    assert state.status_message is not None
    assert "SyncRouterAgent fails its workflow task (attempt " in state.status_message
    assert shown.returncode == 0, shown.stderr
    operator_view = json.loads(shown.stdout)
    assert "SyncRouterAgent fails its workflow task (attempt " in operator_view["statusMessage"]
    # The Web UI: the task's page names its body, whose page shows the failing workflow task.
    body_id = f"{workflow_id_for(task_id, None)}-body"
    assert f"`{body_id}`" in ui["current_details"], ui
    assert ui["pending_children"] == [body_id], ui
    assert ui["body_workflow_task_attempt"] >= 2, ui


async def what_the_ui_shows(server: DevServer, workflow_id: str) -> dict[str, Any]:
    """A task's page and its body's, read through the UI server's API as its pages do."""
    assert server.ui_url is not None
    async with httpx.AsyncClient(base_url=server.ui_url, timeout=10) as http:
        task = (await http.get(f"{NAMESPACE}/workflows/{workflow_id}")).json()
        children = [child["workflowId"] for child in task.get("pendingChildren") or []]
        body = (await http.get(f"{NAMESPACE}/workflows/{children[0]}")).json() if children else {}
        return {
            "current_details": await current_details(http, workflow_id),
            "pending_children": children,
            "body_workflow_task_attempt": int(
                (body.get("pendingWorkflowTask") or {}).get("attempt") or 0
            ),
        }


async def test_a_leg_that_a_worker_without_the_tool_keeps_failing_says_so(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient, task_queue: str
) -> None:
    """A retryable infrastructure failure of a function tool's leg (a tool's own
    exception is a completed ``isError`` task): a worker whose server lacks the tool."""
    front = agents(
        temporal_tasks(stuck_call_timeout_s=STUCK_AFTER_S, run_worker=False), with_activities=True
    )
    other = FastMCP("another server")
    plugin = McpTasksPlugin(other)
    worker = Worker(temporal_client, task_queue=task_queue, plugins=[plugin])
    async with worker, served(front) as (plain, tasks):
        error, _ = await stuck_call(plain, "crunch", {"n": 7})
        task_id = task_of(error)
        assert "Tool leg 'crunch' fails (attempt " in error.error.message, error.error.message
        assert "not served by this worker" in error.error.message, error.error.message
        state = await get_task(tasks.session, task_id)
    assert state.status == "working"
    assert state.status_message is not None and "not served" in state.status_message


async def test_legs_on_a_queue_no_worker_polls_say_so(temporal_tasks: BuildTasks) -> None:
    extension = temporal_tasks(
        stuck_call_timeout_s=STUCK_AFTER_S,
        tools={"crunch": ToolOptions(task_queue="nobody-polls-this-queue")},
    )
    async with served(agents(extension, with_activities=True)) as (plain, tasks):
        error, _ = await stuck_call(plain, "crunch", {"n": 7})
        task_id = task_of(error)
        assert "No worker polls task queue 'nobody-polls-this-queue'" in error.error.message
        state = await get_task(tasks.session, task_id)
    assert state.status == "working"
    assert state.status_message is not None
    assert state.status_message.startswith("No worker polls task queue 'nobody-polls-this-queue'")


async def test_polling_a_stuck_task_asks_temporal_for_its_queue_once_in_a_while(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deeper read (the queue's pollers) is remembered: a client polling a stuck task
    20 times costs Temporal one ``DescribeTaskQueue`` per ``REMEMBER_S`` that it took,
    beside the ``describe`` each poll costs anyway."""
    extension = temporal_tasks(tools={"crunch": ToolOptions(task_queue="nobody-polls-either")})
    async with served(agents(extension, with_activities=True)) as (_, tasks):
        task = await call_tool_task(tasks, "crunch", {"n": 7})
        await until_said(tasks, task.task_id, "No worker polls task queue 'nobody-polls-either'")
        bodies = StuckBodies(temporal_client, query_timeout=TEST_QUERY_TIMEOUT)
        service = temporal_client.workflow_service
        asked: list[object] = []
        real = service.describe_task_queue

        async def counted(request: Any, **options: Any) -> Any:
            asked.append(request)
            return await real(request, **options)

        monkeypatch.setattr(service, "describe_task_queue", counted)
        workflow_id = workflow_id_for(task.task_id, None)
        healths = []
        began = time.monotonic()
        for _ in range(20):
            description = await describe_raw(temporal_client, workflow_id)
            assert description is not None
            healths.append(await bodies.health(description))
        windows = 1 + int((time.monotonic() - began) / stuck_bodies.REMEMBER_S)
    assert all(health.stuck is not None for health in healths), healths
    assert 1 <= len(asked) <= windows, (len(asked), windows)


async def until_said(client: Client[Any], task_id: str, prefix: str, timeout: float = 30) -> None:
    """Poll ``tasks/get`` until the task's ``statusMessage`` starts with ``prefix``."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not ((await get_task(client.session, task_id)).status_message or "").startswith(prefix):
        assert asyncio.get_running_loop().time() < deadline, prefix
        await asyncio.sleep(0.2)


async def test_a_task_no_worker_runs_says_so_and_a_worker_finishes_it(
    temporal_tasks: BuildTasks, task_queue: str
) -> None:
    options = {"stuck_call_timeout_s": STUCK_AFTER_S}
    front = agents(temporal_tasks(run_worker=False, **options), with_activities=True)
    async with served(front) as (plain, tasks):
        error, _ = await stuck_call(plain, "crunch", {"n": 7})
        task_id = task_of(error)
        assert f"No worker polls task queue {task_queue!r}" in error.error.message
    async with served(agents(temporal_tasks(**options), with_activities=True)) as (_, tasks):
        finished = await until_ended(tasks, task_id)
    assert finished.status == "completed", finished


async def until_ended(client: Client[Any], task_id: str, timeout: float = 60) -> TaskState:
    """The task once it ended, read by ``tasks/get`` (fails the test past ``timeout``)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (state := await get_task(client.session, task_id)).status in ("working",):
        assert asyncio.get_running_loop().time() < deadline, state
        await asyncio.sleep(0.2)
    return state


async def test_langgraphs_stock_sync_router_is_named_as_the_failing_workflow_task(
    temporal_tasks: BuildTasks,
) -> None:
    """Issue 50's second mistake as made: ``tools_condition`` routing a LangGraph graph."""
    pytest.importorskip("temporalio.langgraph", reason="needs the langgraph extra")
    from temporalio.langgraph import LangGraphPlugin

    from tests.processes.stuck_langgraph import StockRouterAgent, routed_graph

    extension = temporal_tasks(
        stuck_call_timeout_s=STUCK_AFTER_S,
        plugins=[LangGraphPlugin(graphs={"routed": routed_graph()})],
    )
    mcp = FastMCP("langgraph")
    mcp.add_extension(extension)
    mcp.add_tool(workflow_tool(StockRouterAgent))
    async with served(mcp) as (plain, tasks):
        error, _ = await stuck_call(plain, "stock_router_agent", {"question": "hello"})
        state = await get_task(tasks.session, task_of(error))
    message = error.error.message
    assert "Workflow StockRouterAgent fails its workflow task (attempt " in message, message
    assert "NotImplementedError" in message, message
    assert state.status == "working"
    assert state.status_message is not None
    assert "StockRouterAgent fails its workflow task" in state.status_message
