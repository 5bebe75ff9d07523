"""A task's life, driven by a FastMCP ``Client`` the way users drive it.

working → input_required → working → completed | failed | cancelled, each
transition on a real Temporal server, over the in-memory transport unless the
test is about HTTP.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.client.elicitation import ElicitResult
from fastmcp.exceptions import ToolError
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowExecutionStatus
from temporalio.worker import Worker

from fastmcp_temporal import LegPolicy, McpTasksPlugin, TemporalTasks
from fastmcp_temporal.client import call_tool_task, update_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.server.tasks.starter import ToolOptions
from fastmcp_temporal.workflows.task_workflow import FINAL_MEMO_LIMIT
from tests.conftest import http_client
from tests.helpers import declares_elicitation
from tests.histories.replay import task_replayer


def ask(key: str, message: str) -> mcp_types.InputRequiredResult:
    """The guard pattern: end this leg by asking the client one question."""
    return mcp_types.InputRequiredResult(
        input_requests={
            key: mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message=message,
                    requested_schema={
                        "type": "object",
                        "properties": {"answer": {"type": "string"}},
                        "required": ["answer"],
                    },
                )
            )
        }
    )


def answers(ctx: Context) -> dict[str, Any]:
    return {
        key: response.content["answer"]
        for key, response in (ctx.input_responses or {}).items()
        if isinstance(response, mcp_types.ElicitResult) and response.content
    }


async def test_call_tool_drives_a_task_transparently(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    mcp = FastMCP("transparent")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def add(a: int, b: int) -> int:
        return a + b

    async with Client(mcp) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result.data == 5
        task = await call_tool_task(client, "add", {"a": 1, "b": 1})
        assert (await task.result()).data == 2
        assert (await task.status()).status == "completed"


async def test_raised_errors_complete_the_task_with_a_masked_is_error_result(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    mcp = FastMCP("errors", mask_error_details=True)
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def explicit() -> str:
        raise ToolError("you may see this")

    runs: list[str] = []

    @mcp.tool(task=True)
    async def secret() -> str:
        runs.append("secret")
        raise ValueError("database password is hunter2")

    async with Client(mcp) as client:
        for tool, text in [
            ("explicit", "you may see this"),
            ("secret", "Error calling tool 'secret'"),
        ]:
            task = await call_tool_task(client, tool, {}, raise_on_error=False)
            final = await task.wait()
            assert final.status == "completed"
            assert final.result is not None and final.result["isError"] is True
            assert final.result["content"] == [{"type": "text", "text": text}]
    assert runs == ["secret"], "a tool error is an answer, never retried"


async def test_cancel_stops_a_running_body_and_the_task_reads_cancelled(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    mcp = FastMCP("cancel")
    mcp.add_extension(temporal_tasks())
    started, stopped = asyncio.Event(), asyncio.Event()

    @mcp.tool(task=True)
    async def forever() -> str:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            stopped.set()
            raise
        return "never"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "forever", {})
        await asyncio.wait_for(started.wait(), 60)
        await task.cancel()
        final = await task.wait(timeout=60)
        assert final.status == "cancelled"
        assert stopped.is_set(), "the body saw the cancellation"
        await task.cancel()  # cancelling again is an ack and changes nothing
        assert (await task.status()).status == "cancelled"


async def test_finished_tasks_never_change(temporal_tasks: Callable[..., TemporalTasks]) -> None:
    mcp = FastMCP("terminal")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def quick() -> str:
        return "done"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "quick", {})
        done = await task.wait()
        await task.cancel()
        await update_task(client.session, task.task_id, {"any": {"action": "accept"}})
        after = await task.status()
        assert after.status == "completed"
        assert after.result == done.result
        assert after.last_updated_at == done.last_updated_at


@pytest.mark.parametrize("size", [10, 40_000], ids=["view-in-memo", "view-from-result"])
async def test_finished_tasks_read_the_same_whatever_the_size_of_their_result(
    temporal_tasks: Callable[..., TemporalTasks], temporal_client: TemporalClient, size: int
) -> None:
    """A small finished view rides in the memo (one describe per read); a big one does not."""
    mcp = FastMCP("sizes")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def text(n: int) -> str:
        return "x" * n

    async with Client(mcp) as client:
        task = await call_tool_task(client, "text", {"n": size})
        done = await task.wait()
        again = await task.status()
    assert done.status == again.status == "completed"
    assert done.result == again.result
    assert done.result is not None and done.result["content"][0]["text"] == "x" * size
    description = await temporal_client.get_workflow_handle(
        workflow_id_for(task.task_id, None)
    ).describe()
    memo = (await description.memo())["mcp"]
    assert memo["status"] == ("completed" if size < FINAL_MEMO_LIMIT else "working")
    assert (memo.get("result") is not None) == (size < FINAL_MEMO_LIMIT)


async def test_only_the_tool_the_client_named_becomes_a_task(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    mcp = FastMCP("nested")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def inner() -> str:
        return "inner ran inline"

    @mcp.tool(task=True)
    async def outer(ctx: Context) -> str:
        nested = await ctx.fastmcp.call_tool("inner", {})
        return str(nested.structured_content["result"])

    async with Client(mcp) as client:
        assert (await client.call_tool("outer", {})).data == "inner ran inline"


async def test_input_required_round_trip_over_http(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    """The tool asks; the task parks; the client answers; the next leg sees the answer."""
    mcp = FastMCP("guard")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def greet(ctx: Context) -> str:
        got = answers(ctx)
        if "name" not in got:
            return ask("name", "Who are you?")  # type: ignore[return-value]
        return f"Hello, {got['name']}!"

    async with http_client(mcp, elicitation_handler=declares_elicitation) as client:
        task = await call_tool_task(client, "greet", {})
        parked = await task.wait(state="input_required", timeout=60)
        (key,) = parked.input_requests
        assert key != "name", "keys are minted by the task, not the tool"
        assert parked.input_requests[key]["method"] == "elicitation/create"
        await update_task(
            client.session, task.task_id, {key: {"action": "accept", "content": {"answer": "Ada"}}}
        )
        assert (await task.result()).data == "Hello, Ada!"


async def test_elicitation_handler_answers_parked_tasks_transparently(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    mcp = FastMCP("handler")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def two_questions(ctx: Context) -> str:
        got = answers(ctx)
        state = ctx.request_state or ""
        if not state:
            return mcp_types.InputRequiredResult(  # type: ignore[return-value]
                input_requests=ask("q", "first?").input_requests, request_state="one"
            )
        if state == "one":
            return mcp_types.InputRequiredResult(  # type: ignore[return-value]
                input_requests=ask("q", "second?").input_requests,
                request_state=f"one:{got['q']}",
            )
        return f"{state}+{got['q']}"

    seen: list[str] = []

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        seen.append(message)
        return ElicitResult(action="accept", content={"answer": message.rstrip("?")})

    async with http_client(mcp, elicitation_handler=handler) as client:
        result = await client.call_tool("two_questions", {})
        assert result.data == "one:first+second"
        assert seen == ["first?", "second?"]


async def test_partial_answers_retire_only_their_keys(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    mcp = FastMCP("partial")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def pair(ctx: Context) -> str:
        got = answers(ctx)
        if not got:
            requests = {**ask("a", "A?").input_requests, **ask("b", "B?").input_requests}
            return mcp_types.InputRequiredResult(input_requests=requests)  # type: ignore[return-value]
        return f"{got['a']}{got['b']}"

    async with Client(mcp, elicitation_handler=declares_elicitation) as client:
        task = await call_tool_task(client, "pair", {})
        parked = await task.wait(state="input_required", timeout=60)
        key_a, key_b = sorted(parked.input_requests)
        accept = {"action": "accept", "content": {"answer": "x"}}
        await update_task(client.session, task.task_id, {key_a: accept, "never-issued": accept})
        rest = await task.status()
        assert rest.status == "input_required"
        assert set(rest.input_requests) == {key_b}
        with pytest.raises(Exception, match="Invalid input response"):
            await update_task(client.session, task.task_id, {key_b: {"action": 42}})
        assert set((await task.status()).input_requests) == {key_b}
        await update_task(
            client.session, task.task_id, {key_b: {"action": "accept", "content": {"answer": "y"}}}
        )
        assert (await task.result()).data == "xy"


@pytest.mark.parametrize("timeout", [None, 10], ids=["activity-legs", "short-tool"])
async def test_racing_updates_start_the_next_leg_exactly_once(
    temporal_tasks: Callable[..., TemporalTasks], timeout: float | None
) -> None:
    """Also for a short tool, whose first leg is local: the answered leg is an
    activity, so answers racing its end cannot cost its result (``UNHANDLED_COMMAND``)."""
    mcp = FastMCP("race")
    mcp.add_extension(temporal_tasks())
    second_legs: list[str] = []

    async def once(ctx: Context) -> str:
        got = answers(ctx)
        if not got:
            return ask("go", "Go?")  # type: ignore[return-value]
        second_legs.append(got["go"])
        return got["go"]

    mcp.tool(task=True, timeout=timeout)(once)

    async with Client(mcp, elicitation_handler=declares_elicitation) as client:
        task = await call_tool_task(client, "once", {})
        (key,) = (await task.wait(state="input_required", timeout=60)).input_requests
        await asyncio.gather(
            *(
                update_task(
                    client.session,
                    task.task_id,
                    {key: {"action": "accept", "content": {"answer": str(i)}}},
                )
                for i in range(100)
            )
        )
        winner = (await task.result()).data
        assert second_legs == [winner]


async def test_cancel_while_parked_and_later_updates_are_no_ops(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    """``tasks/cancel`` of a parked task returns once every read shows it ``cancelled``:
    the ``tasks/get`` right after it does, with no wait; an answer after it resumes nothing."""
    mcp = FastMCP("parked-cancel")
    mcp.add_extension(temporal_tasks())
    runs: list[str] = []

    @mcp.tool(task=True)
    async def parked(ctx: Context) -> str:
        runs.append("leg")
        return ask("q", "?") if not answers(ctx) else "answered"  # type: ignore[return-value]

    async with Client(mcp, elicitation_handler=declares_elicitation) as client:
        for _ in range(3):
            task = await call_tool_task(client, "parked", {}, raise_on_error=False)
            (key,) = (await task.wait(state="input_required", timeout=60)).input_requests
            await task.cancel()
            assert (await task.status()).status == "cancelled"
            await update_task(
                client.session,
                task.task_id,
                {key: {"action": "accept", "content": {"answer": "x"}}},
            )
            assert (await task.status()).status == "cancelled"
            assert (await task.wait(timeout=60)).status == "cancelled"
    assert runs == ["leg"] * 3  # no answer ran a second leg


async def test_a_parked_task_cancelled_with_no_worker_up_reads_cancelled_and_ends_so(
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """With no worker to apply it, the cancellation is read from Temporal's records: the
    task is ``cancelled`` for every read at once, an answer is ignored, and the next
    worker ends it so without running its body again."""
    mcp = FastMCP("front-end")
    mcp.add_extension(temporal_tasks(run_worker=False))
    runs: list[str] = []

    @mcp.tool(task=True)
    async def job(ctx: Context) -> str:
        runs.append("leg")
        return ask("ok", "OK?") if not answers(ctx) else "finished"  # type: ignore[return-value]

    async with Client(mcp, elicitation_handler=declares_elicitation) as client:
        task = await call_tool_task(client, "job", {}, raise_on_error=False)
        async with Worker(temporal_client, task_queue=task_queue, plugins=[McpTasksPlugin(mcp)]):
            (key,) = (await task.wait(state="input_required", timeout=60)).input_requests
        await task.cancel()
        assert (await task.status()).status == "cancelled"
        await update_task(
            client.session, task.task_id, {key: {"action": "accept", "content": {"answer": "y"}}}
        )
        assert (await task.status()).status == "cancelled"
        handle = temporal_client.get_workflow_handle(workflow_id_for(task.task_id, None))
        async with Worker(temporal_client, task_queue=task_queue, plugins=[McpTasksPlugin(mcp)]):
            async with asyncio.timeout(60):
                while (await handle.describe()).status != WorkflowExecutionStatus.CANCELED:
                    await asyncio.sleep(0.1)
        assert (await task.status()).status == "cancelled"
    assert runs == ["leg"]


async def test_tasks_are_readable_and_answerable_with_no_worker_up(
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """A front end without a worker answers from Temporal's records and never hangs."""
    mcp = FastMCP("front-end")
    mcp.add_extension(temporal_tasks(run_worker=False))

    @mcp.tool(task=True)
    async def job(ctx: Context) -> str:
        return ask("ok", "OK?") if not answers(ctx) else "finished"  # type: ignore[return-value]

    async with Client(mcp, elicitation_handler=declares_elicitation) as client:
        task = await call_tool_task(client, "job", {})
        polled = await task.status()  # no worker has ever polled this queue
        assert polled.status == "working"
        async with Worker(temporal_client, task_queue=task_queue, plugins=[McpTasksPlugin(mcp)]):
            parked = await task.wait(state="input_required", timeout=60)
        (key,) = parked.input_requests
        # The worker is gone again: the parked state and the answer still work.
        assert (await task.status()).input_requests == parked.input_requests
        await update_task(
            client.session, task.task_id, {key: {"action": "accept", "content": {"answer": "y"}}}
        )
        async with Worker(temporal_client, task_queue=task_queue, plugins=[McpTasksPlugin(mcp)]):
            assert (await task.result()).data == "finished"


async def test_local_legs_run_the_same_task_with_an_activity_only_after_the_answer(
    temporal_tasks: Callable[..., TemporalTasks], temporal_client: TemporalClient
) -> None:
    """``ToolOptions(local_legs=True)``: short legs as local activities, same task semantics.

    The leg that follows the answer is an activity (racing answers could make
    Temporal drop a local leg's result: ``workflows.local_legs``)."""
    from fastmcp_temporal.server.tasks.starter import ToolOptions

    mcp = FastMCP("local")
    mcp.add_extension(temporal_tasks(tools={"add": ToolOptions(local_legs=True)}))

    @mcp.tool(task=True)
    async def add(a: int, b: int, ctx: Context) -> int:
        if not ctx.input_responses:
            return ask("go", "Go?")  # type: ignore[return-value]
        return a + b

    async with Client(mcp, elicitation_handler=declares_elicitation) as client:
        task = await call_tool_task(client, "add", {"a": 2, "b": 3})
        (key,) = (await task.wait(state="input_required", timeout=60)).input_requests
        await update_task(
            client.session, task.task_id, {key: {"action": "accept", "content": {"answer": "y"}}}
        )
        assert (await task.result()).data == 5
    history = await temporal_client.get_workflow_handle(f"mcp-anon-{task.task_id}").fetch_history()
    kinds = [event.event_type for event in history.events]
    assert EventType.EVENT_TYPE_MARKER_RECORDED in kinds  # the first leg's local result
    assert kinds.count(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) == 1  # the answered leg


async def test_a_leg_still_running_at_the_ttl_fails_the_task_as_expired(
    temporal_tasks: Callable[..., TemporalTasks], temporal_client: TemporalClient
) -> None:
    """The TTL bounds a leg with all its attempts; one that outlives it ends the task."""
    mcp = FastMCP("slow")
    mcp.add_extension(temporal_tasks(ttl_ms=2000))

    @mcp.tool(task=True)
    async def outlive(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "too late"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "outlive", {"seconds": 30}, raise_on_error=False)
        final = await task.wait(state="failed", timeout=30)
    message = "Task expired: its tool leg did not finish within the task's TTL (2000 ms)"
    assert final.status_message == message
    assert final.error == {"code": -32000, "message": message}
    history = await temporal_client.get_workflow_handle(
        workflow_id_for(task.task_id, None)
    ).fetch_history()
    assert (await task_replayer().replay_workflow(history)).replay_failure is None


async def test_a_local_leg_is_retried_up_to_max_attempts(
    temporal_tasks: Callable[..., TemporalTasks], tmp_path: Path
) -> None:
    """A local leg cut off at ``local_timeout_s`` runs again, up to ``max_attempts`` attempts.

    Losing its worker never counts for a local leg (it runs inside the workflow
    task, which the next worker starts afresh), so its own timeout is all the
    count bounds: a leg slow on its first attempt finishes on its second; one
    always too slow fails the task after its third. The legs record Temporal's
    attempt number, not how often they ran: a workflow task that times out on a
    loaded machine runs an attempt again (local activities are at least once).
    """
    mcp = FastMCP("local")
    local = ToolOptions(local_legs=True)
    mcp.add_extension(
        temporal_tasks(
            leg_policy=LegPolicy(local_timeout_s=1, max_attempts=3),
            tools={"slow_once": local, "always_slow": local},
        )
    )

    def record_attempt(name: str) -> int:
        attempt = activity.info().attempt
        (tmp_path / f"{name}-{attempt}-{uuid.uuid4().hex}").write_text("")
        return attempt

    def attempts(name: str) -> set[int]:
        return {int(path.name.split("-")[1]) for path in tmp_path.glob(f"{name}-*")}

    @mcp.tool(task=True)
    async def slow_once() -> str:
        attempt = record_attempt("slow_once")
        await asyncio.sleep(30 if attempt == 1 else 0)
        return f"attempt {attempt}"

    @mcp.tool(task=True)
    async def always_slow() -> str:
        record_attempt("always_slow")
        await asyncio.sleep(30)
        return "never"

    async with Client(mcp) as client:
        once = await call_tool_task(client, "slow_once", {})
        always = await call_tool_task(client, "always_slow", {}, raise_on_error=False)
        assert (await once.result()).data == "attempt 2"
        failed = await always.wait(state="failed", timeout=60)
    assert failed.status_message == "Tool leg failed: Activity timed out"
    assert attempts("slow_once") == {1, 2}
    assert attempts("always_slow") == {1, 2, 3}
