"""Bodies that need the live request stay inline for a client that did not opt in.

A tool written for inline calls that asks imperatively (``ctx.elicit()``) kept
working when durable synchronous calls became the default: a FastMCP
``Client`` with an elicitation handler gets what it got before (on 2025-11-25
the question; on 2026-07-28 FastMCP's own error, imperative questions do not
exist there), and no workflow is started. So do bodies that sample through
``ctx.session`` or read ``ctx.request_context``: each answers what its switched-off
twin answers and notes that it ran in the request. A body that only *mentions*
such a call (a docstring, a string) is still durable.

A *task* that asks on 2025-11-25 (an ``InputRequiredResult``) is asked live on the
open call: elicitation (``tests/test_sync_calls_lifecycle.py``), sampling and roots
(here), each answered into the same task; a client that did not declare what a
question needs cannot be asked, and the task is cancelled.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mcp_types
import pytest
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_context
from fastmcp.tools.function_tool import FunctionTool
from mcp.shared.exceptions import MCPError
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.server.protocol.live_request import needs_live_request
from fastmcp_temporal.server.tasks.starter import ToolOptions
from tests.plain_calls import (
    MODES,
    PlainClient,
    count_workflows,
    task_status,
    wait_status,
    wire,
)
from tests.ports import run_server_async

BuildTasks = Callable[..., TemporalTasks]


async def asks(ctx: Context) -> str:
    answer = await ctx.elicit("Your name?", str)
    return f"hello {answer.data}" if answer.action == "accept" else "no name"  # type: ignore[union-attr]


async def reads_session(context: Context) -> str:
    return type(context.session).__name__


async def via_get_context() -> str:
    ctx = get_context()
    roots = await ctx.list_roots()
    return str(len(roots))


async def mentions(ctx: Context) -> str:
    """Would call ``ctx.elicit()``, but does not."""
    return "ctx.elicit is only a word here"


@pytest.mark.parametrize(
    ("fn", "live"),
    [(asks, True), (reads_session, True), (via_get_context, True), (mentions, False)],
)
def test_what_needs_the_live_request(fn: Callable[..., Any], live: bool) -> None:
    assert needs_live_request(FunctionTool.from_function(fn)) is live


@pytest.mark.parametrize("mode", MODES)
async def test_an_imperative_question_still_reaches_the_client(
    temporal_tasks: BuildTasks, mode: str, temporal_client: TemporalClient, task_queue: str
) -> None:
    mcp = FastMCP("live")
    mcp.add_extension(temporal_tasks())
    mcp.tool(task=True)(asks)
    mcp.tool(task=True)(mentions)

    async def answer(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return "Ada"

    async with (
        run_server_async(mcp) as url,
        PlainClient(url, mode=mode, elicitation_handler=answer) as client,  # type: ignore[arg-type]
    ):
        if mode == "legacy":
            assert (await client.call_tool("asks", {})).data == "hello Ada"
        else:  # inline, 2026-07-28 has no server-initiated requests: FastMCP's own error
            with pytest.raises(ToolError, match="unavailable on 2026-07-28"):
                await client.call_tool("asks", {})
        # A durable call after it: once its workflow is listed, one of `asks` would be too.
        # (The answers above already say `asks` ran inline: a task leg's ``ctx.elicit()``
        # ends with an ``isError`` result that points to the guard pattern.)
        assert (await client.call_tool("mentions", {})).data == "ctx.elicit is only a word here"
    assert await count_workflows(temporal_client, task_queue, 1) == 1  # `mentions` only


def live_bodies(mcp: FastMCP, ran: list[tuple[str, bool]], options: dict[str, Any]) -> list[str]:
    """Bodies that use the live request, each also as ``<name>_inline`` (switched off).

    Each notes where it ran (``ctx.is_background_task``) before it touches the live
    request, so a body that wrongly ran as a task leg would say so even if it failed.
    FastMCP 4.1 has no ``ctx.sample()``: a body samples through ``ctx.session``
    (``create_message``, as FastMCP's own proxy relays sampling); ``samples_the_old_way``
    is a body written for an older FastMCP's ``ctx.sample()``, which fails the same inline.
    """

    async def samples(ctx: Context) -> str:
        ran.append(("samples", ctx.is_background_task))
        message = mcp_types.SamplingMessage(
            role="user", content=mcp_types.TextContent(type="text", text="2+2?")
        )
        answer = await ctx.session.create_message(
            messages=[message], max_tokens=5, related_request_id=ctx.request_id
        )
        return answer.content.text  # type: ignore[union-attr]

    async def samples_the_old_way(ctx: Context) -> str:
        ran.append(("samples_the_old_way", ctx.is_background_task))
        return (await ctx.sample("2+2?")).text  # type: ignore[attr-defined]

    async def reads_request(ctx: Context) -> str:
        ran.append(("reads_request", ctx.is_background_task))
        return f"{ctx.request_context.protocol_version}"  # type: ignore[union-attr]

    async def reads_the_session(ctx: Context) -> str:
        ran.append(("reads_the_session", ctx.is_background_task))
        return type(ctx.session).__name__

    bodies = [samples, samples_the_old_way, reads_request, reads_the_session]
    for body in bodies:
        mcp.tool(name=body.__name__, task=True)(body)
        mcp.tool(name=f"{body.__name__}_inline", task=True)(body)
        options[f"{body.__name__}_inline"] = ToolOptions(durable_sync_calls=False)
    return [body.__name__ for body in bodies]


async def outcome(client: PlainClient, name: str) -> Any:
    """What the call answers on the wire: its result, or its JSON-RPC error."""
    try:
        return wire(await client.call_tool_mcp(name, {}))
    except MCPError as err:
        return {"error": err.error.model_dump(mode="json", exclude_none=True)}


@pytest.mark.filterwarnings("ignore:The sampling capability is deprecated")
@pytest.mark.parametrize("mode", MODES)
async def test_bodies_that_sample_or_read_the_request_or_session_stay_inline(
    temporal_tasks: BuildTasks, mode: str, temporal_client: TemporalClient, task_queue: str
) -> None:
    """``ctx.session`` (sampling through it), ``ctx.request_context``, ``ctx.sample``: each
    body answers what its switched-off twin answers, and ran in the request, not a leg."""
    ran: list[tuple[str, bool]] = []
    options: dict[str, ToolOptions] = {}
    mcp = FastMCP("live-bodies")
    names = live_bodies(mcp, ran, options)
    mcp.add_extension(temporal_tasks(tools=options))
    mcp.tool(task=True)(mentions)

    async def model(messages: Any, params: Any, context: Any) -> str:
        return "4"

    async with (
        run_server_async(mcp) as url,
        PlainClient(url, mode=mode, sampling_handler=model) as client,  # type: ignore[arg-type]
    ):
        answered = {name: await outcome(client, name) for name in names}
        twins = {name: await outcome(client, f"{name}_inline") for name in names}
        # A durable call after them: once its workflow is listed, theirs would be too.
        assert (await client.call_tool("mentions", {})).data == "ctx.elicit is only a word here"
    shown = json.loads(json.dumps(twins).replace("_inline", ""))
    assert answered == shown
    version = "2025-11-25" if mode == "legacy" else "2026-07-28"
    assert answered["reads_request"]["content"][0]["text"] == version
    if mode == "legacy":  # the client's model answered (2026-07-28: FastMCP's error, as inline)
        assert answered["samples"]["content"][0]["text"] == "4"
    assert ran == [(name, False) for name in names] * 2  # every body ran in its request
    assert await count_workflows(temporal_client, task_queue, 1) == 1  # `mentions` only


SUM = mcp_types.CreateMessageRequest(
    params=mcp_types.CreateMessageRequestParams(
        messages=[
            mcp_types.SamplingMessage(
                role="user", content=mcp_types.TextContent(type="text", text="2+2?")
            )
        ],
        max_tokens=5,
    )
)
WHERE = mcp_types.ListRootsRequest()
QUESTIONS = {
    "sampling": {"sum": SUM},
    "roots": {"where": WHERE},
    "both": {"sum": SUM, "where": WHERE},
}


def asking(extension: TemporalTasks, legs: list[list[str]]) -> FastMCP:
    """``asks_for``: its first leg asks the chosen questions, its second answers with theirs."""
    mcp = FastMCP("asking")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def asks_for(ctx: Context, kind: str) -> str:
        answers = ctx.input_responses or {}
        legs.append(sorted(answers))
        if not answers:
            return mcp_types.InputRequiredResult(input_requests=QUESTIONS[kind])  # type: ignore[return-value, arg-type]
        said: list[str] = []
        if isinstance(model := answers.get("sum"), mcp_types.CreateMessageResult):
            said.append(f"model: {model.content.text}")  # type: ignore[union-attr]
        if isinstance(roots := answers.get("where"), mcp_types.ListRootsResult):
            said.append(f"roots: {','.join(str(root.uri) for root in roots.roots)}")
        return "; ".join(said)

    return mcp


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("sampling", "model: 4"),
        ("roots", "roots: file:///srv/archive"),
        ("both", "model: 4; roots: file:///srv/archive"),
    ],
)
async def test_a_tasks_sampling_and_roots_questions_are_asked_live_on_the_handshake_wire(
    temporal_tasks: BuildTasks,
    kind: str,
    said: str,
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """2025-11-25 has no MRTR result: a task's ``sampling/createMessage`` and ``roots/list``
    go to a client that declared them as live requests on the open call (as elicitation
    does), the answers reach the task's next leg, and the call answers its result."""
    legs: list[list[str]] = []
    asked: list[mcp_types.CreateMessageRequestParams] = []

    async def model(
        messages: Any, params: mcp_types.CreateMessageRequestParams, context: Any
    ) -> str:
        asked.append(params)
        return "4"

    async with (
        run_server_async(asking(temporal_tasks(), legs)) as url,
        PlainClient(  # type: ignore[arg-type]
            url, mode="legacy", sampling_handler=model, roots=["file:///srv/archive"]
        ) as client,
    ):
        assert (await client.call_tool("asks_for", {"kind": kind})).data == said
    assert legs == [[], sorted(QUESTIONS[kind])]  # one leg asked, one leg got the answers
    if "sum" in QUESTIONS[kind]:
        (params,) = asked
        assert params.max_tokens == 5 and params.messages[0].content.text == "2+2?"  # type: ignore[union-attr]
    else:
        assert asked == []
    assert await count_workflows(temporal_client, task_queue, 1) == 1  # the whole exchange
    assert await task_status(temporal_client, task_queue) == "completed"


async def test_a_sampling_question_to_a_client_without_a_model_ends_the_task(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient, task_queue: str
) -> None:
    """2025-11-25, ``sampling`` not declared (an elicitation handler is not enough): nobody
    can answer, so the client gets FastMCP's error for that wire and the task is cancelled."""

    async def answer(message: str, response_type: Any, params: Any, context: Any) -> Any:
        raise AssertionError("a sampling question is not an elicitation")

    async with (
        run_server_async(asking(temporal_tasks(), [])) as url,
        PlainClient(url, mode="legacy", elicitation_handler=answer) as client,  # type: ignore[arg-type]
    ):
        with pytest.raises(MCPError, match="only exists at MCP 2026-07-28"):
            await client.call_tool_mcp("asks_for", {"kind": "sampling"})
        # With the server (and its worker) still up: the cancel needs a workflow task.
        await wait_status(temporal_client, task_queue, "cancelled")
