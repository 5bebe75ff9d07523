"""What a tool body sees inside a Temporal-backed task: the ``TaskContext``.

A task leg runs on a worker, later than (and possibly far from) the
``tools/call`` that created it. There is no live session and no request, so the
foreground ``Context`` cannot answer from them; ``TaskContext`` keeps FastMCP's
``Context`` surface and answers from what the task captured at creation.

Every test here drives a real task end to end: a real FastMCP server with
``TemporalTasks``, a real FastMCP ``Client`` (in memory, or streamable HTTP where
the transport matters), and the session's real Temporal dev server. Tool bodies
report what they observed as their result, and the test asserts on that result,
so a failure inside the worker shows up as a readable diff here.

The behaviour pinned is the one FastMCP specifies for background tasks (its
Docket peer's Context tests), adapted to a design with no live session at all:

- identity: ``task_id`` / ``is_background_task``; no ``request_context``, no ``session``;
- ``ctx.elicit`` fails fast, pointing to the guard pattern (``InputRequiredResult``);
- progress (``ctx.report_progress`` and the ``Progress`` dependency) surfaces as
  ``statusMessage`` on ``tasks/get`` while the leg runs;
- logging is gated by the submitting client's ``logging/setLevel`` and written
  server-side (SEP-2663 sends no ``notifications/message`` for tasks);
- ``client_supports_extension`` answers from the creating request's capabilities;
- the caller's access token and headers are restored; there is no HTTP request;
- lifespan context, dependency injection, mounted servers and tool versions
  behave as they do for a foreground ``tools/call``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.dependencies import CurrentFastMCP, Depends, Progress
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.context import Context
from fastmcp.server.dependencies import (
    get_access_token,
    get_http_headers,
    get_http_request,
)

from fastmcp_temporal import TemporalTasks, _compat
from fastmcp_temporal.client import ToolTask, call_tool_task
from tests.ports import run_server_async

TASKS_EXTENSION_ID = "io.modelcontextprotocol/tasks"

#: Upper bound for waiting on something a running task is expected to show.
#: A bound, not an expectation: the polls normally succeed within a second or two.
OBSERVE_WITHIN_S = 60.0

BuildTasks = Callable[..., TemporalTasks]


async def wait_for_status_message(task: ToolTask, expected: str | None) -> str | None:
    """Poll ``tasks/get`` until the running task reports ``expected`` as its ``statusMessage``.

    Progress travels on the leg's activity heartbeats, which the worker sends at
    most once a second, so the message shows up on a later poll, not at once.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + OBSERVE_WITHIN_S
    seen: list[tuple[str, str | None]] = []
    while loop.time() < deadline:
        status = await task.status()
        seen.append((status.status, status.status_message))
        if status.status_message == expected:
            assert status.status == "working"
            return expected
        if status.status != "working":
            break
        await asyncio.sleep(0.1)
    pytest.fail(f"statusMessage never became {expected!r}; polls saw {seen[-5:]}")


# -- identity: a task leg is a background task with no request ---------------------------------


async def test_task_context_identifies_the_task_and_has_no_request(
    temporal_tasks: BuildTasks,
) -> None:
    """Inside a task, the context is a background-task context with no live request.

    - ``ctx.task_id`` is the id the client received in its ``CreateTaskResult``;
    - ``ctx.is_background_task`` is ``True``;
    - ``ctx.task_id`` is read-only;
    - ``ctx.request_context`` is ``None`` (the creating request is long gone);
    - ``ctx.session`` raises ``RuntimeError`` (there is no session to hand out).
    """
    mcp = FastMCP("identity")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def whoami(ctx: Context) -> dict[str, Any]:
        try:
            ctx.task_id = "forged"  # type: ignore[misc]
            task_id_read_only = False
        except AttributeError:
            task_id_read_only = True
        try:
            _ = ctx.session
            session_error = None
        except RuntimeError as err:
            session_error = type(err).__name__
        return {
            "task_id": ctx.task_id,
            "is_background_task": ctx.is_background_task,
            "task_id_read_only": task_id_read_only,
            "request_context_is_none": ctx.request_context is None,
            "session_error": session_error,
        }

    async with Client(mcp) as client:
        task = await call_tool_task(client, "whoami", {})
        result = await task.result()

    assert result.data == {
        "task_id": task.task_id,
        "is_background_task": True,
        "task_id_read_only": True,
        "request_context_is_none": True,
        "session_error": "RuntimeError",
    }


# -- elicitation: not imperative inside a task ----------------------------------------------------


async def test_elicit_inside_a_task_completes_with_guard_pattern_guidance(
    temporal_tasks: BuildTasks,
) -> None:
    """``await ctx.elicit(...)`` in a task fails fast instead of parking the worker.

    The ``ToolError`` it raises is a tool error like any other: the task ends
    ``completed`` with an ``isError`` result (not ``failed``), and the message
    tells the author to use the guard pattern, i.e. return an
    ``InputRequiredResult``.
    """
    mcp = FastMCP("elicit")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", str)
        return str(answer)

    async with Client(mcp) as client:
        task = await call_tool_task(client, "ask_name", {}, raise_on_error=False)
        final = await task.wait(timeout=OBSERVE_WITHIN_S)

    assert final.status == "completed"
    assert final.result is not None
    assert final.result["isError"] is True
    assert "InputRequiredResult" in final.result["content"][0]["text"]


# -- progress: statusMessage on tasks/get while the leg runs --------------------------------------


async def test_report_progress_message_is_the_status_message_while_running(
    temporal_tasks: BuildTasks,
) -> None:
    """``ctx.report_progress(p, total, message)`` shows ``message`` as ``statusMessage``.

    The tool reports, then blocks until the test has seen the message on
    ``tasks/get``; a later report replaces it. Reporting never fails the task.
    """
    mcp = FastMCP("progress")
    mcp.add_extension(temporal_tasks())
    halfway = asyncio.Event()
    almost = asyncio.Event()

    @mcp.tool(task=True)
    async def crunch(ctx: Context) -> str:
        await ctx.report_progress(50, 100, "Half done")
        await halfway.wait()
        await ctx.report_progress(90, 100, "Almost there")
        await almost.wait()
        return "crunched"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "crunch", {})
        await wait_for_status_message(task, "Half done")
        halfway.set()
        await wait_for_status_message(task, "Almost there")
        almost.set()
        result = await task.result()

    assert result.data == "crunched"


async def test_progress_dependency_message_is_the_status_message_while_running(
    temporal_tasks: BuildTasks,
) -> None:
    """FastMCP's ``Progress`` dependency reports into the running leg, too.

    ``Progress()`` resolves to the leg's progress inside a task (not an
    in-memory tracker nobody can see), so ``set_message`` becomes the task's
    ``statusMessage`` and ``set_total`` / ``increment`` are accepted.
    """
    mcp = FastMCP("progress-dependency")
    mcp.add_extension(temporal_tasks())
    seen = asyncio.Event()
    observed: dict[str, Any] = {}

    @mcp.tool(task=True)
    async def index(progress: Progress = Progress()) -> str:  # noqa: B008
        await progress.set_total(10)
        await progress.increment(3)
        await progress.set_message("Indexed 3 of 10")
        observed.update(current=progress.current, total=progress.total)
        await seen.wait()
        return "indexed"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "index", {})
        await wait_for_status_message(task, "Indexed 3 of 10")
        seen.set()
        result = await task.result()

    assert result.data == "indexed"
    assert observed == {"current": 3, "total": 10}


async def test_progress_dependency_can_clear_its_message(temporal_tasks: BuildTasks) -> None:
    """``Progress.set_message(None)`` clears the message, as ``ProgressLike`` specifies.

    FastMCP's in-memory progress and Docket's execution progress both treat
    ``None`` as "clear the previous message"; inside a task the cleared message
    must read back as ``None`` and ``tasks/get`` must stop showing it. (Unlike
    ``ctx.report_progress(p, total)`` without a message, which keeps the
    previous message, as FastMCP's background path does.)
    """
    mcp = FastMCP("progress-clear")
    mcp.add_extension(temporal_tasks())
    downloading_seen = asyncio.Event()
    cleared = asyncio.Event()
    finish = asyncio.Event()
    observed: dict[str, Any] = {}

    @mcp.tool(task=True)
    async def download(progress: Progress = Progress()) -> str:  # noqa: B008
        await progress.set_message("Downloading")
        await downloading_seen.wait()
        await progress.set_message(None)
        observed["message_after_clear"] = progress.message
        cleared.set()
        await finish.wait()
        return "downloaded"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "download", {})
        try:
            await wait_for_status_message(task, "Downloading")
            downloading_seen.set()
            await asyncio.wait_for(cleared.wait(), OBSERVE_WITHIN_S)
            assert observed["message_after_clear"] is None
            await wait_for_status_message(task, None)
        finally:
            downloading_seen.set()
            finish.set()
            result = await task.result()

    assert result.data == "downloaded"


# -- logging: gated by the submitting client's level, written server-side -------------------------

#: FastMCP 4.2 keeps ``logging/setLevel`` as connection state, out of reach of
#: background work, which logs at the server's default there (upstream's choice).
session_log_level = pytest.mark.skipif(
    not _compat.LOG_LEVEL_PER_SESSION,
    reason="FastMCP 4.2+: a client's logging/setLevel does not reach background work",
)


def _task_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [
        (record.levelname, record.getMessage())
        for record in caplog.records
        if record.name == "fastmcp_temporal.task"
    ]


@session_log_level
async def test_task_logging_is_gated_by_the_submitting_clients_level(
    temporal_tasks: BuildTasks, caplog: pytest.LogCaptureFixture
) -> None:
    """Logging from a task never fails it, and honours ``logging/setLevel``.

    ``logging/setLevel`` is a handshake-era method, so a legacy client sets the
    level (``error``); over the in-memory transport every connection shares one
    level gate, so the task the modern client then creates is gated by it. A
    task's log lines go to the ``fastmcp_temporal.task`` logger: the ``info``
    and ``debug`` lines are suppressed, the ``error`` line is emitted.
    """
    caplog.set_level(logging.DEBUG, logger="fastmcp_temporal.task")
    mcp = FastMCP("logging")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def chatty(ctx: Context) -> str:
        await ctx.debug("debug line (suppressed)")
        await ctx.info("info line (suppressed)")
        await ctx.error("error line (emitted)")
        return "logged"

    async with Client(mcp, mode="legacy") as legacy, Client(mcp) as client:
        await legacy.set_logging_level("error")
        task = await call_tool_task(client, "chatty", {})
        result = await task.result()

    assert result.data == "logged"
    task_lines = [
        (record.levelname, record.getMessage())
        for record in caplog.records
        if record.name == "fastmcp_temporal.task"
    ]
    assert task_lines == [("ERROR", f"task {task.task_id}: error line (emitted)")]


@session_log_level
@pytest.mark.parametrize(
    "mounted",
    [
        pytest.param(False, id="root-tool"),
        pytest.param(True, id="mounted-tool"),
    ],
)
async def test_level_set_while_the_task_runs_applies_to_its_later_logs(
    temporal_tasks: BuildTasks, caplog: pytest.LogCaptureFixture, mounted: bool
) -> None:
    """The gate is the submitting client's *current* level, not a snapshot.

    A task can run for hours; if the client raises its level to ``error``
    meanwhile, the task's later ``info`` lines are suppressed. This holds for a
    tool on the server itself and for a tool on a mounted child server alike.
    """
    caplog.set_level(logging.DEBUG, logger="fastmcp_temporal.task")
    parent = FastMCP("logging-live")
    home = FastMCP("logging-live-child") if mounted else parent
    level_raised = asyncio.Event()

    @home.tool(task=True)
    async def long_job(ctx: Context) -> str:
        await level_raised.wait()
        await ctx.info("info line (suppressed)")
        await ctx.error("error line (emitted)")
        return "done"

    if mounted:
        parent.mount(home, namespace="c")
    parent.add_extension(temporal_tasks())

    async with Client(parent, mode="legacy") as legacy, Client(parent) as client:
        task = await call_tool_task(client, "c_long_job" if mounted else "long_job", {})
        await legacy.set_logging_level("error")
        level_raised.set()
        result = await task.result()

    assert result.data == "done"
    task_lines = [
        (record.levelname, record.getMessage())
        for record in caplog.records
        if record.name == "fastmcp_temporal.task"
    ]
    assert task_lines == [("ERROR", f"task {task.task_id}: error line (emitted)")]


async def test_task_logging_without_a_level_uses_the_server_default(
    temporal_tasks: BuildTasks, caplog: pytest.LogCaptureFixture
) -> None:
    """With no ``logging/setLevel``, the server default applies (everything passes)."""
    caplog.set_level(logging.DEBUG, logger="fastmcp_temporal.task")
    mcp = FastMCP("logging-default")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def chatty(ctx: Context) -> str:
        await ctx.debug("debug line")
        await ctx.info("info line")
        await ctx.warning("warning line")
        return "logged"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "chatty", {})
        result = await task.result()

    assert result.data == "logged"
    task_lines = [
        (record.levelname, record.getMessage())
        for record in caplog.records
        if record.name == "fastmcp_temporal.task"
    ]
    assert task_lines == [
        ("DEBUG", f"task {task.task_id}: debug line"),
        ("INFO", f"task {task.task_id}: info line"),
        ("WARNING", f"task {task.task_id}: warning line"),
    ]


async def test_task_logging_is_gated_by_the_servers_client_log_level(
    temporal_tasks: BuildTasks, caplog: pytest.LogCaptureFixture
) -> None:
    """With no ``logging/setLevel``, a task logs at the server's ``client_log_level``."""
    caplog.set_level(logging.DEBUG, logger="fastmcp_temporal.task")
    mcp = FastMCP("logging-server-level", client_log_level="warning")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def chatty(ctx: Context) -> str:
        await ctx.info("info line (suppressed)")
        await ctx.warning("warning line (emitted)")
        return "logged"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "chatty", {})
        assert (await task.result()).data == "logged"

    assert _task_lines(caplog) == [("WARNING", f"task {task.task_id}: warning line (emitted)")]


@pytest.mark.skipif(
    _compat.LOG_LEVEL_PER_SESSION, reason="FastMCP 4.1: a task follows its client's level"
)
async def test_on_fastmcp_42_a_clients_level_does_not_reach_its_tasks(
    temporal_tasks: BuildTasks, caplog: pytest.LogCaptureFixture
) -> None:
    """As FastMCP's own background work on 4.2: the server default gates, not the client."""
    caplog.set_level(logging.DEBUG, logger="fastmcp_temporal.task")
    mcp = FastMCP("logging-connection-level")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def chatty(ctx: Context) -> str:
        await ctx.info("info line")
        await ctx.error("error line")
        return "logged"

    async with Client(mcp, mode="legacy") as legacy, Client(mcp) as client:
        await legacy.set_logging_level("error")
        task = await call_tool_task(client, "chatty", {})
        assert (await task.result()).data == "logged"

    assert _task_lines(caplog) == [
        ("INFO", f"task {task.task_id}: info line"),
        ("ERROR", f"task {task.task_id}: error line"),
    ]


# -- client capabilities: what the creating request declared --------------------------------------


async def test_client_supports_extension_answers_from_the_creating_request(
    temporal_tasks: BuildTasks,
) -> None:
    """``ctx.client_supports_extension`` works without a session.

    A client that created a task necessarily declared the tasks extension, so
    inside the task that id is supported; an id the client never declared is not.
    """
    mcp = FastMCP("extensions")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def capabilities(ctx: Context) -> dict[str, bool]:
        return {
            "in_task": ctx.is_background_task,
            "tasks": ctx.client_supports_extension(TASKS_EXTENSION_ID),
            "undeclared": ctx.client_supports_extension("com.example/never-declared"),
        }

    async with Client(mcp) as client:
        result = await client.call_tool("capabilities", {})

    assert result.data == {"in_task": True, "tasks": True, "undeclared": False}


# -- identity of the caller: access token and headers over streamable HTTP ------------------------


async def test_access_token_and_headers_round_trip_over_http(
    temporal_tasks: BuildTasks,
) -> None:
    """The creating caller's bearer token and headers are restored in the task.

    The server verifies a real bearer token (``StaticTokenVerifier``). Inside the
    task:

    - ``get_access_token()`` returns that token (value, ``client_id``, scopes, claims);
    - ``get_http_headers()`` returns the creating request's headers (a custom
      header included), but never the raw credential: ``authorization`` is not
      copied into the task, even with ``include_all=True``;
    - ``get_http_request()`` raises ``RuntimeError``: there is no HTTP request.
    """
    verifier = StaticTokenVerifier(
        tokens={"alice-token": {"client_id": "alice", "scopes": ["read", "write"], "sub": "user-1"}}
    )
    mcp = FastMCP("auth", auth=verifier)
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def caller(ctx: Context) -> dict[str, Any]:
        token = get_access_token()
        headers = get_http_headers()
        try:
            get_http_request()
            http_request_error = None
        except RuntimeError as err:
            http_request_error = type(err).__name__
        return {
            "in_task": ctx.is_background_task,
            "token": None if token is None else token.token,
            "client_id": None if token is None else token.client_id,
            "scopes": None if token is None else sorted(token.scopes),
            "sub": None if token is None else token.claims.get("sub"),
            "x_request_origin": headers.get("x-request-origin"),
            "authorization_copied": "authorization" in get_http_headers(include_all=True),
            "http_request_error": http_request_error,
        }

    async with run_server_async(mcp) as url:
        transport = StreamableHttpTransport(url, headers={"X-Request-Origin": "docs-test"})
        async with Client(transport, auth="alice-token") as client:
            result = await client.call_tool("caller", {})

    assert result.data == {
        "in_task": True,
        "token": "alice-token",
        "client_id": "alice",
        "scopes": ["read", "write"],
        "sub": "user-1",
        "x_request_origin": "docs-test",
        "authorization_copied": False,
        "http_request_error": "RuntimeError",
    }


# -- the server's world: lifespan and dependency injection ----------------------------------------


async def test_lifespan_context_is_the_servers_lifespan_result(
    temporal_tasks: BuildTasks,
) -> None:
    """``ctx.lifespan_context`` is the dict the server's lifespan yielded."""

    @asynccontextmanager
    async def lifespan(server: FastMCP) -> AsyncIterator[dict[str, Any]]:
        yield {"db": "connected", "pool_size": 4}

    mcp = FastMCP("lifespan", lifespan=lifespan)
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def read_lifespan(ctx: Context) -> dict[str, Any]:
        return {"in_task": ctx.is_background_task, "lifespan": dict(ctx.lifespan_context)}

    async with Client(mcp) as client:
        result = await client.call_tool("read_lifespan", {})

    assert result.data == {"in_task": True, "lifespan": {"db": "connected", "pool_size": 4}}


async def test_dependencies_are_injected_and_cleaned_up(temporal_tasks: BuildTasks) -> None:
    """``Depends(...)`` and ``CurrentFastMCP()`` resolve inside a task.

    An async context-manager dependency is entered before the body runs and
    exited after it returns (its cleanup runs before the task completes), and
    ``CurrentFastMCP()`` is the server the tool is registered on.
    """
    events: list[str] = []

    @asynccontextmanager
    async def connection() -> AsyncIterator[str]:
        events.append("opened")
        try:
            yield "conn-1"
        finally:
            events.append("closed")

    mcp = FastMCP("dependencies")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def query(
        ctx: Context,
        conn: str = Depends(connection),
        server: FastMCP = CurrentFastMCP(),  # noqa: B008
    ) -> dict[str, Any]:
        events.append(f"used {conn}")
        return {
            "in_task": ctx.is_background_task,
            "conn": conn,
            "server_is_registering_server": server is mcp,
        }

    async with Client(mcp) as client:
        result = await client.call_tool("query", {})

    assert result.data == {"in_task": True, "conn": "conn-1", "server_is_registering_server": True}
    assert events == ["opened", "used conn-1", "closed"]


async def test_dependency_cleanup_runs_when_the_tool_raises(temporal_tasks: BuildTasks) -> None:
    """A raising body still exits its dependencies; the task completes with ``isError``."""
    events: list[str] = []

    @asynccontextmanager
    async def connection() -> AsyncIterator[str]:
        events.append("opened")
        try:
            yield "conn-1"
        finally:
            events.append("closed")

    mcp = FastMCP("dependencies-error")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def broken(conn: str = Depends(connection)) -> str:
        raise ValueError(f"could not use {conn}")

    async with Client(mcp) as client:
        task = await call_tool_task(client, "broken", {}, raise_on_error=False)
        final = await task.wait(timeout=OBSERVE_WITHIN_S)

    assert final.status == "completed"
    assert final.result is not None
    assert final.result["isError"] is True
    assert final.result["content"][0]["text"] == "Error calling tool 'broken': could not use conn-1"
    assert events == ["opened", "closed"]


# -- composition: mounted servers and tool versions -----------------------------------------------


async def test_mounted_tool_runs_in_the_child_servers_context(
    temporal_tasks: BuildTasks,
) -> None:
    """A task for a mounted tool runs with the *child* as its server.

    The extension is on the parent; the tool lives on a child mounted under the
    ``c`` namespace. Inside the task ``ctx.fastmcp`` and ``CurrentFastMCP()``
    are the child, and ``ctx.lifespan_context`` is the child's own lifespan.
    """

    @asynccontextmanager
    async def child_lifespan(server: FastMCP) -> AsyncIterator[dict[str, Any]]:
        yield {"owner": "child"}

    parent = FastMCP("parent")
    child = FastMCP("child", lifespan=child_lifespan)

    @child.tool(task=True)
    async def where(
        ctx: Context,
        server: FastMCP = CurrentFastMCP(),  # noqa: B008
    ) -> dict[str, Any]:
        return {
            "ctx_fastmcp_is_child": ctx.fastmcp is child,
            "current_fastmcp_is_child": server is child,
            "lifespan_context": dict(ctx.lifespan_context),
            "task_id_set": ctx.task_id is not None,
        }

    parent.mount(child, namespace="c")
    parent.add_extension(temporal_tasks())

    async with Client(parent) as client:
        task = await call_tool_task(client, "c_where", {})
        result = await task.result()

    assert result.data == {
        "ctx_fastmcp_is_child": True,
        "current_fastmcp_is_child": True,
        "lifespan_context": {"owner": "child"},
        "task_id_set": True,
    }


async def test_task_runs_the_tool_version_the_client_called(temporal_tasks: BuildTasks) -> None:
    """With two versions of one tool, the task runs the version the call named.

    ``call_tool_task(..., version="1")`` runs version 1 even though version 2 is
    newer; a call that names no version runs the highest.
    """
    mcp = FastMCP("versions")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(name="greet", version="1", task=True)
    async def greet_v1(name: str, ctx: Context) -> str:
        return f"v1: hello {name} (task={ctx.is_background_task})"

    @mcp.tool(name="greet", version="2", task=True)
    async def greet_v2(name: str, ctx: Context) -> str:
        return f"v2: hello {name} (task={ctx.is_background_task})"

    async with Client(mcp) as client:
        pinned = await call_tool_task(client, "greet", {"name": "ada"}, version="1")
        latest = await call_tool_task(client, "greet", {"name": "ada"})
        pinned_result = await pinned.result()
        latest_result = await latest.result()

    assert pinned_result.data == "v1: hello ada (task=True)"
    assert latest_result.data == "v2: hello ada (task=True)"
