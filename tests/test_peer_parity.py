"""Side by side with ``fastmcp-tasks``: asking for input, parked tasks, refused requests.

Every test runs one scenario against the peer (``TasksExtension``, memory://
Docket, in this process) and against ``TemporalTasks`` (the session's real
Temporal), and compares what the client saw (``tests.parity``: ids, input keys,
timestamps and ``pollIntervalMs`` normalized). Where we differ on purpose, the
test says so and checks both sides of the difference; each such difference is
listed, with its reason, in docs/differences.md. ``test_peer_parity_context``
does the same for the rest of ``Context`` in a task.

The peer exists only for FastMCP 4.1, so on 4.2 these tests skip.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import mcp_types
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.extensions import ServerExtension

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.client_wire import cancel_task, get_task, update_task
from tests.helpers import declares_elicitation, needs_peer
from tests.parity import (
    TERMINAL,
    Extension,
    accept,
    error_of,
    get,
    parked_key,
    reach,
    side_by_side,
    without_our_status_message,
)
from tests.test_parking import question

pytestmark = needs_peer


@pytest.fixture
def temporal(temporal_tasks: Callable[..., TemporalTasks]) -> Extension:
    return lambda: temporal_tasks()


def sampling_question() -> mcp_types.InputRequiredResult:
    message = mcp_types.SamplingMessage(
        role="user", content=mcp_types.TextContent(type="text", text="2+2?")
    )
    request = mcp_types.CreateMessageRequest(
        params=mcp_types.CreateMessageRequestParams(messages=[message], max_tokens=5)
    )
    return mcp_types.InputRequiredResult(input_requests={"sum": request})


def asking_server(extension: ServerExtension, runs: list[str] | None = None) -> FastMCP:
    """Tools that ask, each guarding itself against the round that carries the answer."""
    mcp = FastMCP("parity")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def confirm(ctx: Context) -> str:
        if runs is not None:
            runs.append("confirm")
        if not ctx.input_responses:
            return question()  # type: ignore[return-value]
        answer = ctx.input_responses["ok"]
        assert isinstance(answer, mcp_types.ElicitResult)
        return f"confirmed: {answer.action} {sorted(answer.content or {})}"

    @mcp.tool(task=True)
    async def ask_model(ctx: Context) -> str:
        return "answered" if ctx.input_responses else sampling_question()  # type: ignore[return-value]

    @mcp.tool(task=True)
    async def ask_name(ctx: Context) -> str:
        """The imperative style: ``ctx.elicit`` cannot block a task (seed: guard guidance)."""
        if ctx.input_responses:
            return "answered"
        answer = await ctx.elicit("What is your name?", str)
        return f"hello {answer}"

    @mcp.tool(task=True)
    async def progress_then_ask(ctx: Context) -> str:
        if ctx.input_responses:
            return "done"
        await ctx.report_progress(1, 2, "half way")
        return question()  # type: ignore[return-value]

    # A short tool: our legs run as local activities, whose progress takes another path.
    mcp.tool(task=True, timeout=10, name="progress_then_ask_briefly")(progress_then_ask)
    return mcp


async def tool_error(call: Any) -> str:
    with pytest.raises(ToolError) as raised:
        await call
    return str(raised.value)


# -- a client without an elicitation handler; a second client answers --------------------------


async def test_a_client_without_a_handler_sees_the_task_parked_and_another_client_answers(
    temporal: Extension,
) -> None:
    async def scenario(extension: Extension) -> list[Any]:
        mcp = asking_server(extension())
        seen: list[Any] = []
        async with Client(mcp) as first:
            # Transparent tasks: the client half polls, finds a question and no handler.
            message = await tool_error(first.call_tool("confirm", {}))
            task_id = message.split()[1]
            seen += [message, await get(first, task_id)]
            async with Client(mcp) as second:  # the same (anonymous) caller
                parked = await get(second, task_id)
                await update_task(second.session, task_id, {parked_key(parked): accept({"a": 1})})
                seen += [parked, await reach(first, task_id, *TERMINAL)]
        return seen

    peer, ours = await side_by_side(scenario, temporal)
    assert peer[1]["status"] == "input_required"
    assert ours[-1]["result"]["content"][0]["text"] == "confirmed: accept ['a']"
    assert without_our_status_message(ours, "elicitation") == peer


async def test_a_sampling_request_the_client_cannot_answer_parks_the_same_way(
    temporal: Extension,
) -> None:
    async def scenario(extension: Extension) -> list[Any]:
        async with Client(asking_server(extension())) as client:
            message = await tool_error(client.call_tool("ask_model", {}))
            return [message, await get(client, message.split()[1])]

    peer, ours = await side_by_side(scenario, temporal)
    assert "no elicitation handler" in peer[0] and peer[1]["status"] == "input_required"
    assert without_our_status_message(ours, "sampling") == peer


# -- tools that guard themselves against re-entrant asks -----------------------------------------


async def test_guard_and_elicit_styles_with_a_client_that_answers(temporal: Extension) -> None:
    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return {"a": message}

    async def scenario(extension: Extension) -> list[Any]:
        runs: list[str] = []
        async with Client(asking_server(extension(), runs), elicitation_handler=handler) as client:
            guarded = await client.call_tool("confirm", {})
            imperative = await client.call_tool("ask_name", {}, raise_on_error=False)
        return [guarded.data, imperative.is_error, imperative.content[0].text, runs]  # type: ignore[union-attr]

    peer, ours = await side_by_side(scenario, temporal)
    assert peer[0] == "confirmed: accept ['a']" and peer[3] == ["confirm", "confirm"]
    assert peer[1] is True and "InputRequiredResult" in peer[2]
    assert ours == peer


# -- tasks/update and tasks/cancel on a parked task ----------------------------------------------


async def test_concurrent_updates_to_a_parked_task_run_the_next_leg_once(
    temporal: Extension,
) -> None:
    async def scenario(extension: Extension) -> list[Any]:
        runs: list[str] = []
        mcp = asking_server(extension(), runs)
        async with Client(mcp) as first, Client(mcp) as second:
            task = await call_tool_task(first, "confirm", {})
            key = parked_key(await reach(first, task.task_id, "input_required"))
            await asyncio.gather(
                *(
                    update_task(client.session, task.task_id, {key: accept({"n": n})})
                    for n, client in enumerate((first, second, first, second))
                )
            )
            final = await reach(first, task.task_id, *TERMINAL)
            await update_task(second.session, task.task_id, {key: accept({"late": 1})})
            return [final, await get(second, task.task_id), runs]

    peer, ours = await side_by_side(scenario, temporal)
    assert peer[0]["status"] == "completed" and peer[2] == ["confirm", "confirm"]
    assert ours == peer


async def test_cancelling_a_parked_task(temporal: Extension) -> None:
    async def scenario(extension: Extension) -> list[Any]:
        runs: list[str] = []
        async with Client(asking_server(extension(), runs)) as client:
            task = await call_tool_task(client, "confirm", {}, raise_on_error=False)
            key = parked_key(await reach(client, task.task_id, "input_required"))
            await cancel_task(client.session, task.task_id)
            cancelled = await reach(client, task.task_id, *TERMINAL)
            await update_task(client.session, task.task_id, {key: accept()})
            await cancel_task(client.session, task.task_id)
            return [cancelled, await get(client, task.task_id), runs]

    peer, ours = await side_by_side(scenario, temporal)
    assert peer[0]["status"] == "cancelled" and peer[2] == ["confirm"]
    assert ours == peer


async def test_an_unknown_answer_key_is_ignored_and_the_task_stays_parked(
    temporal: Extension,
) -> None:
    async def scenario(extension: Extension) -> list[Any]:
        async with Client(asking_server(extension())) as client:
            task = await call_tool_task(client, "confirm", {})
            parked = await reach(client, task.task_id, "input_required")
            await update_task(client.session, task.task_id, {"not-a-key": accept()})
            after = await get(client, task.task_id)
            await cancel_task(client.session, task.task_id)
            return [parked, after]

    peer, ours = await side_by_side(scenario, temporal)
    assert peer[0] == peer[1]
    assert without_our_status_message(ours, "elicitation") == peer


# -- the server stops while a task is parked -----------------------------------------------------


async def test_a_parked_task_outlives_a_server_restart(temporal: Extension) -> None:
    """Stop the server (its lifespan ends) with a task parked; start it again; answer.

    The peer's memory:// Docket lives as long as the process, so an in-process
    restart is comparable; across processes only Redis keeps its tasks (we keep
    ours in Temporal either way: ``tests/test_crash.py``).
    """

    async def scenario(extension: Extension) -> list[Any]:
        async with Client(asking_server(extension())) as client:
            task = await call_tool_task(client, "confirm", {})
            before = await reach(client, task.task_id, "input_required")
        async with Client(asking_server(extension())) as client:
            after = await get(client, task.task_id)
            await update_task(client.session, task.task_id, {parked_key(after): accept({"b": 2})})
            return [before, after, await reach(client, task.task_id, *TERMINAL)]

    peer, ours = await side_by_side(scenario, temporal)
    assert peer[0] == peer[1] and peer[2]["status"] == "completed"
    assert without_our_status_message(ours, "elicitation") == peer


async def test_requests_the_server_refuses(temporal: Extension) -> None:
    """Unknown tasks, a malformed answer, and a cancel after the end (an ack, no change)."""

    async def scenario(extension: Extension) -> list[Any]:
        async with Client(asking_server(extension())) as client:
            session = client.session
            unknown = "an-unknown-task-id-0123456789"
            seen: list[Any] = [
                await error_of(get_task(session, unknown)),
                await error_of(update_task(session, unknown, {"k": accept()})),
                await error_of(cancel_task(session, unknown)),
            ]
            task = await call_tool_task(client, "confirm", {})
            key = parked_key(await reach(client, task.task_id, "input_required"))
            seen.append(await error_of(update_task(session, task.task_id, {key: {"action": 7}})))
            await update_task(session, task.task_id, {key: accept({"c": 3})})
            done = await reach(client, task.task_id, *TERMINAL)
            await cancel_task(session, task.task_id)
            seen += [done, await get(client, task.task_id)]
        return seen

    peer, ours = await side_by_side(scenario, temporal)
    assert peer[0] == {"code": -32602, "message": "Task an-unknown-task-id-0123456789 not found"}
    # A malformed answer: -32602 from both; ours says which answer and why
    # (docs/differences.md, "error texts").
    assert peer[3] == {"code": -32602, "message": "Invalid request parameters"}
    assert ours[3]["code"] == -32602 and "].action: Input should be" in ours[3]["message"]
    assert ours[:3] + ours[4:] == peer[:3] + peer[4:]


# -- an ask of several requests, answered one at a time ------------------------------------------


async def test_a_partial_answer_retires_only_its_keys(temporal: Extension) -> None:
    two = mcp_types.InputRequiredResult(
        input_requests={key: question().input_requests["ok"] for key in ("first", "second")}
    )

    async def scenario(extension: Extension) -> list[Any]:
        mcp = FastMCP("two")
        mcp.add_extension(extension())

        @mcp.tool(task=True)
        async def both(ctx: Context) -> list[str]:
            return sorted(ctx.input_responses) if ctx.input_responses else two  # type: ignore[return-value]

        async with Client(mcp, elicitation_handler=declares_elicitation) as client:
            task = await call_tool_task(client, "both", {})
            parked = await reach(client, task.task_id, "input_required")
            first, second = parked["inputRequests"]
            await update_task(client.session, task.task_id, {first: accept()})
            partly = await get(client, task.task_id)
            await update_task(client.session, task.task_id, {second: accept()})
            return [parked, partly, await reach(client, task.task_id, *TERMINAL)]

    peer, ours = await side_by_side(scenario, temporal)
    assert len(peer[0]["inputRequests"]) == 2 and len(peer[1]["inputRequests"]) == 1
    assert peer[2]["result"]["structuredContent"] == {"result": ["first", "second"]}
    assert ours == peer
