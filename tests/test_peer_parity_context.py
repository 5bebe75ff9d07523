"""Side by side with ``fastmcp-tasks``: ``Context`` in a task, callers, composition.

The same method as ``test_peer_parity`` (which has the input and parking
scenarios), for what a tool body sees inside a task and what a client gets
back: identity, progress, errors, the caller's token and headers over HTTP,
dependencies, mounted servers, versions; and the intended differences, each
checked from both sides (docs/differences.md).

The peer exists only for FastMCP 4.1, so on 4.2 these tests skip.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import mcp_types
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.dependencies import CurrentFastMCP, Depends
from fastmcp.exceptions import ToolError
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.dependencies import get_access_token, get_http_headers, get_http_request
from fastmcp.server.extensions import ServerExtension
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID
from mcp.shared.exceptions import MCPError

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
    peer_extension,
    reach,
    side_by_side,
    without_our_status_message,
)
from tests.ports import run_server_async
from tests.test_parking import question
from tests.test_peer_parity import asking_server
from tests.wire import RawMcp

pytestmark = needs_peer


@pytest.fixture
def temporal(temporal_tasks: Callable[..., TemporalTasks]) -> Extension:
    return lambda: temporal_tasks()


# -- the rest of Context in a task ---------------------------------------------------------------


@asynccontextmanager
async def _lifespan(server: FastMCP) -> AsyncIterator[dict[str, str]]:
    yield {"db": "ready"}


def context_server(extension: ServerExtension, release: asyncio.Event) -> FastMCP:
    mcp = FastMCP("context", lifespan=_lifespan)
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def whoami(ctx: Context) -> dict[str, Any]:
        try:
            _ = ctx.session
            session = "available"
        except RuntimeError:
            session = "RuntimeError"
        return {
            "task_id": ctx.task_id,
            "is_background_task": ctx.is_background_task,
            "request_context": ctx.request_context,
            "session": session,
            "other_extension": ctx.client_supports_extension("com.example/never-declared"),
            "lifespan": ctx.lifespan_context,
        }

    @mcp.tool(task=True)
    async def supports_tasks(ctx: Context) -> bool:
        return ctx.client_supports_extension(TASKS_EXTENSION_ID)

    @mcp.tool(task=True)
    async def slow(ctx: Context) -> str:
        await ctx.report_progress(1, 3, "step 1 of 3")
        await release.wait()
        return "done"

    @mcp.tool(task=True)
    async def tool_error() -> str:
        raise ToolError("not today")

    @mcp.tool(task=True)
    async def crash() -> str:
        raise ValueError("an internal detail")

    @mcp.tool(task=True)
    async def protocol_error() -> str:
        raise MCPError(code=-32602, message="bad things")

    return mcp


async def test_context_inside_a_task(temporal: Extension) -> None:
    async def scenario(extension: Extension) -> list[Any]:
        release = asyncio.Event()
        seen: list[Any] = []
        async with Client(context_server(extension(), release)) as client:
            for name in ("whoami", "tool_error", "crash", "protocol_error"):
                task = await call_tool_task(client, name, {}, raise_on_error=False)
                seen.append(await reach(client, task.task_id, *TERMINAL))
            task = await call_tool_task(client, "slow", {})
            deadline = asyncio.get_running_loop().time() + 60  # a bound on a failure only
            while "statusMessage" not in (running := await get(client, task.task_id)):
                assert asyncio.get_running_loop().time() < deadline, running
                await asyncio.sleep(0.02)
            release.set()
            seen += [running, await reach(client, task.task_id, *TERMINAL)]
        return seen

    peer, ours = await side_by_side(scenario, temporal)
    whoami = peer[0]["result"]["structuredContent"]
    assert whoami["is_background_task"] is True and whoami["lifespan"] == {"db": "ready"}
    assert whoami["task_id"] == "<task 0>"
    assert [state["status"] for state in peer] == [
        "completed", "completed", "completed", "failed", "working", "completed",
    ]  # fmt: skip
    assert peer[4]["statusMessage"] == "step 1 of 3"
    assert ours == peer


async def test_a_task_that_asks_after_reporting_progress_shows_no_stale_progress(
    temporal: Extension,
) -> None:
    async def scenario(extension: Extension) -> list[Any]:
        server = asking_server(extension())
        async with Client(server, elicitation_handler=declares_elicitation) as client:
            seen: list[Any] = []
            for tool in ("progress_then_ask", "progress_then_ask_briefly"):
                task = await call_tool_task(client, tool, {})
                parked = await reach(client, task.task_id, "input_required")
                await update_task(client.session, task.task_id, {parked_key(parked): accept()})
                seen += [parked, await reach(client, task.task_id, *TERMINAL)]
            return seen

    peer, ours = await side_by_side(scenario, temporal)
    assert "statusMessage" not in peer[0] and "statusMessage" not in peer[2]
    assert ours == peer


# -- the intended differences (docs/differences.md) ----------------------------------------------


def checkpoint_server(extension: ServerExtension) -> FastMCP:
    mcp = FastMCP("checkpoints")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def steps(ctx: Context) -> str:
        if ctx.request_state is None:
            return mcp_types.InputRequiredResult(request_state="step-1")  # type: ignore[return-value]
        return f"resumed after {ctx.request_state}"

    return mcp


async def test_difference_state_only_checkpoint_rounds(temporal: Extension) -> None:
    """A state-only round (``requestState``, no ``inputRequests``): the peer ends the task
    with an error result; we keep it as a durable checkpoint and run the next leg."""

    async def scenario(extension: Extension) -> list[Any]:
        async with Client(checkpoint_server(extension())) as client:
            task = await call_tool_task(client, "steps", {}, raise_on_error=False)
            final = await reach(client, task.task_id, *TERMINAL)
            return [final["result"]["isError"], final["result"]["content"][0]["text"]]

    peer, ours = await side_by_side(scenario, temporal)
    assert peer[0] is True and "state-only" in peer[1]
    assert ours == [False, "resumed after step-1"]


async def test_difference_adaptive_poll_interval(temporal: Extension) -> None:
    """The peer always advertises the tool's ``poll_interval`` (5 s by default); we start
    far lower and grow towards it while the task runs, so short tasks end sooner."""

    async def scenario(extension: Extension) -> list[Any]:
        async with Client(asking_server(extension())) as client:
            task = await call_tool_task(client, "confirm", {})
            created = task.create_result.poll_interval_ms
            await reach(client, task.task_id, "input_required")
            await cancel_task(client.session, task.task_id)
            return [created]

    peer = await scenario(peer_extension(f"parity-{uuid.uuid4().hex}"))
    ours = await scenario(temporal)
    assert peer == [5000]
    assert ours[0] is not None and ours[0] < 5000


async def test_difference_extension_detection_answers_from_the_creating_request(
    temporal: Extension,
) -> None:
    """``ctx.client_supports_extension`` in a task: the peer reads the session's
    handshake, which a 2026-07-28 client does not have, so it says ``False`` even for
    the tasks extension the client declared; we answer from the creating request."""

    async def scenario(extension: Extension) -> list[Any]:
        async with Client(context_server(extension(), asyncio.Event())) as client:
            return [(await client.call_tool("supports_tasks", {})).data]

    peer, ours = await side_by_side(scenario, temporal)
    assert peer == [False]
    assert ours == [True]


# -- callers over streamable HTTP: whose task it is, and who they are inside it ------------------


def http_server(extension: ServerExtension) -> FastMCP:
    verifier = StaticTokenVerifier(
        tokens={
            "alice-token": {"client_id": "app", "sub": "alice", "scopes": ["read"]},
            "bob-token": {"client_id": "app", "sub": "bob", "scopes": ["read"]},
        }
    )
    mcp = FastMCP("callers", auth=verifier)
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def who(ctx: Context) -> dict[str, Any]:
        if not ctx.input_responses:
            return question()  # type: ignore[return-value]
        token = get_access_token()
        headers = get_http_headers(include_all=True)
        try:
            get_http_request()
            request = "available"
        except RuntimeError:
            request = "RuntimeError"
        return {
            "sub": None if token is None else token.claims.get("sub"),
            "scopes": None if token is None else token.scopes,
            "origin": headers.get("x-request-origin"),
            "authorization_copied": "authorization" in headers,
            "request": request,
        }

    return mcp


async def test_another_caller_cannot_see_or_answer_a_parked_task_its_owner_can(
    temporal: Extension,
) -> None:
    async def scenario(extension: Extension) -> list[Any]:
        async with run_server_async(http_server(extension())) as url:
            alice = StreamableHttpTransport(url, headers={"X-Request-Origin": "parity"})
            async with Client(alice, auth="alice-token") as first:
                task = await call_tool_task(first, "who", {})
                parked = await reach(first, task.task_id, "input_required")
                async with Client(url, auth="bob-token") as bob:
                    refused = [
                        await error_of(get_task(bob.session, task.task_id)),
                        await error_of(update_task(bob.session, task.task_id, {"k": accept()})),
                        await error_of(cancel_task(bob.session, task.task_id)),
                    ]
                async with Client(url, auth="alice-token") as second:
                    key = parked_key(await get(second, task.task_id))
                    await update_task(second.session, task.task_id, {key: accept()})
                return [parked, *refused, await reach(first, task.task_id, *TERMINAL)]

    peer, ours = await side_by_side(scenario, temporal)
    assert peer[1]["code"] == -32602 and peer[1]["message"].endswith("not found")
    inside = {"sub": "alice", "scopes": ["read"], "origin": "parity", "request": "RuntimeError"}
    assert peer[4]["result"]["structuredContent"] == {**inside, "authorization_copied": True}
    # The one difference (docs/differences.md, "credential headers"): the raw
    # Authorization header is not copied into the task; the token itself is restored.
    assert ours[4]["result"]["structuredContent"] == {**inside, "authorization_copied": False}
    for side in (peer, ours):
        del side[4]["result"]["structuredContent"]["authorization_copied"]
        del side[4]["result"]["content"]
    assert without_our_status_message(ours, "elicitation") == peer


# -- composition: dependencies, a mounted server, tool versions ----------------------------------


def composed_server(extension: ServerExtension, events: list[str]) -> FastMCP:
    @asynccontextmanager
    async def connection() -> AsyncIterator[str]:
        events.append("opened")
        try:
            yield "conn-1"
        finally:
            events.append("closed")

    @asynccontextmanager
    async def child_lifespan(server: FastMCP) -> AsyncIterator[dict[str, str]]:
        yield {"owner": "child"}

    parent = FastMCP("parent")
    child = FastMCP("child", lifespan=child_lifespan)

    @child.tool(task=True)
    async def where(ctx: Context, server: FastMCP = CurrentFastMCP()) -> dict[str, Any]:  # noqa: B008
        return {
            "ctx_server": ctx.fastmcp.name,
            "current_server": server.name,
            "lifespan": dict(ctx.lifespan_context),
        }

    @parent.tool(task=True)
    async def query(conn: str = Depends(connection)) -> str:
        events.append(f"used {conn}")
        return conn

    @parent.tool(task=True)
    async def broken(conn: str = Depends(connection)) -> str:
        raise ValueError(f"could not use {conn}")

    @parent.tool(name="greet", version="1", task=True)
    async def greet_v1(name: str) -> str:
        return f"v1: hello {name}"

    @parent.tool(name="greet", version="2", task=True)
    async def greet_v2(name: str) -> str:
        return f"v2: hello {name}"

    parent.mount(child, namespace="c")
    parent.add_extension(extension)
    return parent


async def test_dependencies_mounted_tools_and_versions(temporal: Extension) -> None:
    async def scenario(extension: Extension) -> list[Any]:
        events: list[str] = []
        calls: list[tuple[str, dict[str, Any], str | None]] = [
            ("c_where", {}, None),
            ("query", {}, None),
            ("broken", {}, None),
            ("greet", {"name": "ada"}, "1"),
            ("greet", {"name": "ada"}, None),
        ]
        seen: list[Any] = []
        async with Client(composed_server(extension(), events)) as client:
            for name, arguments, version in calls:
                task = await call_tool_task(
                    client, name, arguments, version=version, raise_on_error=False
                )
                seen.append(await reach(client, task.task_id, *TERMINAL))
        return [*seen, events]

    peer, ours = await side_by_side(scenario, temporal)
    assert peer[0]["result"]["structuredContent"] == {
        "ctx_server": "child",
        "current_server": "child",
        "lifespan": {"owner": "child"},
    }
    assert peer[-1] == ["opened", "used conn-1", "closed", "opened", "closed"]
    assert [state["result"]["content"][0]["text"] for state in peer[3:5]] == [
        "v1: hello ada",
        "v2: hello ada",
    ]
    assert ours == peer


async def test_difference_status_notifications_on_subscriptions_listen(
    temporal: Extension,
) -> None:
    """``subscriptions/listen`` for task ids: the peer does not serve it (``-32601``);
    we acknowledge the task and push its changes (``tests/test_listen.py``)."""

    async def scenario(extension: Extension) -> list[Any]:
        async with (
            run_server_async(asking_server(extension())) as url,
            Client(url) as client,
        ):
            task = await call_tool_task(client, "confirm", {})
            raw = RawMcp(url)
            listen = {"notifications": {"taskIds": [task.task_id]}}
            async with raw.stream("subscriptions/listen", listen) as (_, messages):
                first = await anext(messages)
            await cancel_task(client.session, task.task_id)
            return [first.get("error", {}).get("code"), first.get("method")]

    peer, ours = await side_by_side(scenario, temporal)
    assert peer == [-32601, None]
    assert ours == [None, "notifications/subscriptions/acknowledged"]
