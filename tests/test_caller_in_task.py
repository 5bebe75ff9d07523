"""What a task sees of its caller: the creating request's session, and its token while valid.

Everything here runs over streamable HTTP against real FastMCP servers whose
tasks run on the session's Temporal dev server, with real bearer tokens
(``StaticTokenVerifier``), speaking raw JSON-RPC (``tests.wire.RawMcp``):

- context parity: ``ctx.session_id`` and ``ctx.get_state/set_state`` inside a
  task are those of the creating request, and a task reaches the submitting
  user's ``UserSession`` bucket;
- a token that expired by the time a leg runs is not installed in that leg.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from typing import Any

import httpx
from fastmcp import Context, FastMCP
from fastmcp.server.dependencies import get_access_token
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.server.sessions import UserSession

from tests.ports import run_server_async
from tests.raw_tasks import (
    ACCEPT,
    ALICE,
    BuildTasks,
    create,
    question,
    verifier,
    wait_for,
)
from tests.wire import PROTOCOL_VERSION, RawMcp

# -- context parity: session id and session-scoped state --------------------------------------


class RecordCreation(Middleware):
    """Notes the session id of each ``tools/call`` and leaves state under it."""

    def __init__(self) -> None:
        self.session_ids: dict[str, list[str]] = {}

    async def on_call_tool(self, context: MiddlewareContext, call_next: Any) -> Any:
        ctx = context.fastmcp_context
        assert ctx is not None
        self.session_ids.setdefault(context.message.name, []).append(ctx.session_id)
        await ctx.set_state("origin", f"left by {context.message.name}")
        return await call_next(context)


async def test_task_session_id_and_state_are_the_creating_requests(
    temporal_tasks: BuildTasks,
) -> None:
    """Inside a task, ``ctx.session_id`` is the one of the ``tools/call`` that created it.

    On 2026-07-28 every request is its own connection: ``ctx.session_id`` is a
    fresh id per request (an authenticated user does not change that), and
    ``ctx.set_state/get_state`` key on it. A task keeps the creating request's
    id for all its legs, so:

    - state the creating request left (here: middleware around the call) is
      visible in the task;
    - state the first leg sets is visible in the second leg, which runs after
      a ``tasks/update`` -- another request, with another session id.
    """
    recorder = RecordCreation()
    mcp = FastMCP("session", auth=verifier(), middleware=[recorder])
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def journal(ctx: Context) -> dict[str, Any]:
        seen = {"session_id": ctx.session_id, "origin": await ctx.get_state("origin")}
        if not ctx.input_responses:
            await ctx.set_state("first_leg", "written by leg 1")
            return question(request_state=json.dumps(seen))
        seen["first_leg"] = await ctx.get_state("first_leg")
        return {"leg1": json.loads(ctx.request_state or "null"), "leg2": seen}

    @mcp.tool
    async def probe(ctx: Context) -> dict[str, Any]:
        return {"session_id": ctx.session_id, "first_leg": await ctx.get_state("first_leg")}

    async with run_server_async(mcp) as url:
        alice = RawMcp(url, bearer="alice")
        task_id = await create(alice, "journal")
        parked = await wait_for(alice, task_id, "input_required")
        (key,) = parked["inputRequests"]
        foreground = await alice.result("tools/call", {"name": "probe", "arguments": {}})
        await alice.result("tasks/update", {"taskId": task_id, "inputResponses": {key: ACCEPT}})
        final = await wait_for(alice, task_id, "completed", "failed")

    (created_in,) = recorder.session_ids["journal"]
    assert final["result"]["structuredContent"] == {
        "leg1": {"session_id": created_in, "origin": "left by journal"},
        "leg2": {
            "session_id": created_in,
            "origin": "left by journal",
            "first_leg": "written by leg 1",
        },
    }
    # A later request from the same client is another connection on 2026-07-28:
    # the equality above is the creating request's id, not a per-client constant.
    assert foreground["structuredContent"]["session_id"] != created_in
    assert foreground["structuredContent"]["first_leg"] is None


async def test_state_under_a_client_session_id_is_shared_with_foreground_calls(
    temporal_tasks: BuildTasks,
) -> None:
    """With an ``Mcp-Session-Id`` header, FastMCP keys session state on it; so does a task.

    A foreground call leaves a note under the session, a task created in the
    same session reads it and answers under it, and a later foreground call
    reads the answer.
    """
    mcp = FastMCP("session-header", auth=verifier())
    mcp.add_extension(temporal_tasks())

    @mcp.tool
    async def put(key: str, value: str, ctx: Context) -> None:
        await ctx.set_state(key, value)

    @mcp.tool
    async def take(key: str, ctx: Context) -> str | None:
        return await ctx.get_state(key)

    @mcp.tool(task=True)
    async def relay(ctx: Context) -> dict[str, Any]:
        note = await ctx.get_state("note")
        await ctx.set_state("reply", f"task read {note!r}")
        return {"session_id": ctx.session_id, "note": note}

    session = {"Mcp-Session-Id": f"sess-{secrets.token_hex(8)}"}
    async with run_server_async(mcp) as url:
        alice = RawMcp(url, bearer="alice")

        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            status, body = await alice.call(
                "tools/call", {"name": name, "arguments": arguments}, headers=session
            )
            assert "result" in body, (status, body)
            return body["result"]

        await call("put", {"key": "note", "value": "from the foreground"})
        task_id = (await call("relay", {}))["taskId"]
        final = await wait_for(alice, task_id, "completed", "failed")
        reply = await call("take", {"key": "reply"})

    assert final["result"]["structuredContent"] == {
        "session_id": session["Mcp-Session-Id"],
        "note": "from the foreground",
    }
    assert reply["structuredContent"] == {"result": "task read 'from the foreground'"}


async def test_user_session_in_a_task_is_the_submitting_users_bucket(
    temporal_tasks: BuildTasks,
) -> None:
    """``session: UserSession`` -- FastMCP's per-user state on 2026-07-28 -- works in a task.

    The bucket is keyed by the authenticated principal, which inside a task is
    the creating caller's restored token: alice's task reads what alice's
    foreground call stored and writes where alice's next call reads; bob's task
    sees none of it.
    """
    mcp = FastMCP("user-session", auth=verifier())
    mcp.add_extension(temporal_tasks())

    @mcp.tool
    async def remember(fact: str, session: UserSession) -> None:
        await session.set("fact", fact)

    @mcp.tool
    async def recall(session: UserSession) -> dict[str, Any]:
        return {"fact": await session.get("fact"), "seen": await session.get("seen")}

    @mcp.tool(task=True)
    async def study(session: UserSession) -> str | None:
        fact = await session.get("fact")
        await session.set("seen", f"task saw {fact!r}")
        return fact

    async with run_server_async(mcp) as url:
        alice, bob = RawMcp(url, bearer="alice"), RawMcp(url, bearer="bob")
        await alice.result("tools/call", {"name": "remember", "arguments": {"fact": "alpha"}})
        alices = await wait_for(alice, await create(alice, "study"), "completed", "failed")
        bobs = await wait_for(bob, await create(bob, "study"), "completed", "failed")
        alice_now = await alice.result("tools/call", {"name": "recall", "arguments": {}})
        bob_now = await bob.result("tools/call", {"name": "recall", "arguments": {}})

    assert alices["result"]["structuredContent"] == {"result": "alpha"}
    assert bobs["result"]["structuredContent"] == {"result": None}
    assert alice_now["structuredContent"] == {"fact": "alpha", "seen": "task saw 'alpha'"}
    assert bob_now["structuredContent"] == {"fact": None, "seen": "task saw None"}


# -- a token that expired before a leg runs is not installed ----------------------------------


async def http_status(url: str, bearer: str) -> int:
    """The HTTP status of an authenticated ``server/discover`` (401 once the token expired)."""
    headers = {
        "Authorization": f"Bearer {bearer}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
        "Mcp-Method": "server/discover",
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    payload = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    async with httpx.AsyncClient(timeout=10) as http:
        return (await http.post(url, json=payload, headers=headers)).status_code


async def test_a_token_expired_before_a_leg_is_not_installed_in_it(
    temporal_tasks: BuildTasks,
) -> None:
    """Leg 1 runs while the creating token is valid and sees it; leg 2 runs after it
    expired and sees no token, although the answer came with a valid token of the
    same ``client_id|sub`` (a token is never swapped for another request's)."""
    now = int(time.time())
    # Leg 1 must have run before this (the call, the workflow's start and the leg's
    # dispatch are several Temporal calls, seconds each on a loaded machine); the
    # test then waits for it to pass, so the margin is the price of every run.
    short_expiry = now + 15
    tokens = {
        "short": {**ALICE, "expires_at": short_expiry},
        "long": {**ALICE, "expires_at": now + 600},
    }
    mcp = FastMCP("expiry", auth=verifier(**tokens))
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def twice(ctx: Context) -> dict[str, Any]:
        token = get_access_token()
        seen = None if token is None else {"token": token.token, "expires_at": token.expires_at}
        if not ctx.input_responses:
            return question(request_state=json.dumps(seen))
        return {"leg1": json.loads(ctx.request_state or "null"), "leg2": seen}

    async with run_server_async(mcp) as url:
        short, long = RawMcp(url, bearer="short"), RawMcp(url, bearer="long")
        task_id = await create(short, "twice")
        parked = await wait_for(long, task_id, "input_required")
        (key,) = parked["inputRequests"]
        # Past the expiry by more than a second: the leg's check is in whole seconds.
        while time.time() <= short_expiry + 1.05:
            await asyncio.sleep(0.1)
        assert await http_status(url, "short") == 401  # expired for live requests, too
        assert await http_status(url, "long") == 200
        await long.result("tasks/update", {"taskId": task_id, "inputResponses": {key: ACCEPT}})
        final = await wait_for(long, task_id, "completed", "failed")

    assert final["result"]["structuredContent"] == {
        "leg1": {"token": "short", "expires_at": short_expiry},
        "leg2": None,
    }
