"""Input a task's creating client never declared: parked by default, or failed on request.

The capabilities are the creating request's: a FastMCP ``Client`` declares
``elicitation`` only with an ``elicitation_handler`` (and ``sampling`` only with
a ``sampling_handler``), as MCP Inspector declares no elicitation at all. By
default the task parks as ``fastmcp-tasks`` parks it (``tests/test_peer_parity.py``
compares the two) and its ``statusMessage`` names what the client lacks;
``TemporalTasks(undeclared_input="fail")`` fails it at once with ``-32021``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from fastmcp import Client, Context, FastMCP

from fastmcp_temporal import TemporalTasks, workflow_tool
from fastmcp_temporal.activities.input_capabilities import undeclared
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.client_wire import update_task
from tests.helpers import declares_elicitation
from tests.processes.agent_workflows import GreeterAgent, logged_step
from tests.test_parking import question


def asking_server(extension: TemporalTasks) -> FastMCP:
    mcp = FastMCP("asking")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def confirm(ctx: Context) -> str:
        return question() if not ctx.input_responses else "confirmed"  # type: ignore[return-value]

    @mcp.tool(task=True)
    async def ask_model(ctx: Context) -> str:
        if ctx.input_responses:
            return "answered"
        sample = mcp_types.CreateMessageRequest(
            params=mcp_types.CreateMessageRequestParams(
                messages=[
                    mcp_types.SamplingMessage(
                        role="user", content=mcp_types.TextContent(type="text", text="2+2?")
                    )
                ],
                max_tokens=5,
            )
        )
        return mcp_types.InputRequiredResult(input_requests={"sum": sample})  # type: ignore[return-value]

    return mcp


async def test_by_default_the_task_parks_and_says_which_capability_is_missing(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    mcp = asking_server(temporal_tasks())
    async with Client(mcp) as client:
        task = await call_tool_task(client, "confirm", {})
        parked = await task.wait(state="input_required", timeout=30)
        sampling = await call_tool_task(client, "ask_model", {})
        asks_model = await sampling.wait(state="input_required", timeout=30)
        async with Client(mcp) as operator:  # another client of the same (anonymous) caller
            await update_task(operator.session, task.task_id, {"1.ok": {"action": "accept"}})
        final = await task.wait(timeout=30)
        await sampling.cancel()
    assert parked.input_requests is not None and list(parked.input_requests) == ["1.ok"]
    assert parked.status_message is not None
    assert "did not declare support for (elicitation)" in parked.status_message
    assert asks_model.status_message is not None and "(sampling)" in asks_model.status_message
    assert final.status == "completed" and final.status_message is None


async def test_a_client_that_declared_it_sees_no_status_message(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    async with Client(
        asking_server(temporal_tasks()), elicitation_handler=declares_elicitation
    ) as client:
        task = await call_tool_task(client, "confirm", {})
        parked = await task.wait(state="input_required", timeout=30)
        await task.cancel()
    assert parked.status_message is None


async def test_fail_rejects_elicitation_from_a_client_that_did_not_declare_it(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    async with Client(asking_server(temporal_tasks(undeclared_input="fail"))) as client:
        task = await call_tool_task(client, "confirm", {}, raise_on_error=False)
        final = await task.wait(timeout=30)
    assert final.status == "failed"
    assert final.error is not None and final.error["code"] == -32021
    assert final.error["data"] == {"requiredCapabilities": {"elicitation": {}}}
    assert "elicitation" in final.error["message"] and "'confirm'" in final.error["message"]


async def test_fail_still_asks_a_client_that_declared_it(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    extension = temporal_tasks(undeclared_input="fail")
    async with Client(asking_server(extension), elicitation_handler=declares_elicitation) as c:
        task = await call_tool_task(c, "confirm", {})
        parked = await task.wait(state="input_required", timeout=30)
        sampling = await call_tool_task(c, "ask_model", {}, raise_on_error=False)
        refused = await sampling.wait(timeout=30)
        await task.cancel()
    assert parked.input_requests is not None and list(parked.input_requests) == ["1.ok"]
    assert refused.status == "failed" and refused.error is not None
    assert refused.error["data"] == {"requiredCapabilities": {"sampling": {}}}


def test_url_mode_needs_the_url_sub_capability_and_unknown_methods_pass() -> None:
    url_ask: dict[str, Any] = {
        "method": "elicitation/create",
        "params": {"mode": "url", "message": "log in", "url": "https://x", "elicitationId": "e"},
    }
    roots: dict[str, Any] = {"method": "roots/list"}
    assert undeclared({"a": url_ask}, {"elicitation": {}}) == {"elicitation": {"url": {}}}
    assert undeclared({"a": url_ask}, {"elicitation": {"url": {}}}) == {}
    assert undeclared({"a": roots}, {"elicitation": {}}) == {"roots": {}}
    assert undeclared({"a": roots}, None) == {}, "not captured (older tasks): no check"
    assert undeclared({"a": {"method": "x/y"}}, {}) == {}


async def test_the_rule_is_the_one_the_task_was_created_under(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    """A front end with ``fail`` creates the task; a worker with ``park`` runs its leg:
    the task fails, as it was promised when it was created (and the other way round)."""
    strict = asking_server(temporal_tasks(undeclared_input="fail", run_worker=False))
    lenient = asking_server(temporal_tasks(undeclared_input="park"))
    async with Client(strict) as client, Client(lenient):
        task = await call_tool_task(client, "confirm", {}, raise_on_error=False)
        final = await task.wait(timeout=30)
    assert final.status == "failed" and final.error is not None
    assert final.error["code"] == -32021


async def test_a_workflow_tools_ask_parks_with_the_same_status_message(
    temporal_tasks: Callable[..., TemporalTasks], tmp_path: Path
) -> None:
    """``ask()`` in a workflow tool parks whatever the rule (failing it would change the
    task workflow), and says what the creating client lacks just the same."""
    mcp = FastMCP("greeter")
    mcp.add_extension(temporal_tasks(undeclared_input="fail"))
    mcp.add_tool(workflow_tool(GreeterAgent, activities=[logged_step]))
    async with Client(mcp) as client:
        task = await call_tool_task(client, "greeter_agent", {"marker_dir": str(tmp_path)})
        parked = await task.wait(state="input_required", timeout=30)
        await task.cancel()
    assert parked.status_message is not None
    assert "did not declare support for (elicitation)" in parked.status_message


def test_the_option_is_checked() -> None:
    with pytest.raises(ValueError, match="undeclared_input"):
        TemporalTasks(undeclared_input="ignore")  # type: ignore[arg-type]
