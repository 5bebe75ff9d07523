"""Who may touch a task, what a task sees of its caller, and what bad input does.

Everything here runs over streamable HTTP against real FastMCP servers whose
tasks run on the session's Temporal dev server, with real bearer tokens
(``StaticTokenVerifier``), speaking raw JSON-RPC (``tests.wire.RawMcp``):

- context parity: ``ctx.session_id`` and ``ctx.get_state/set_state`` inside a
  task are those of the creating request, and a task reaches the submitting
  user's ``UserSession`` bucket;
- a token that expired by the time a leg runs is not installed in that leg;
- isolation: another scope's ``tasks/get|update|cancel`` gets exactly the
  unknown-id error, for running, parked and finished tasks, with or without a
  worker up;
- bad input: malformed ``tasks/update`` params and answers are ``-32602`` and
  change nothing; oversized tool arguments are rejected up front; and a
  property-based test throws random params at ``tasks/*``.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import mcp_types
import pytest
from fastmcp import Context, FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.dependencies import get_access_token
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.server.sessions import UserSession
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from mcp.shared.inbound import encode_header_value
from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from tests.ports import run_server_async
from tests.wire import PROTOCOL_VERSION, RawMcp

BuildTasks = Callable[..., TemporalTasks]

METHODS = ("tasks/get", "tasks/update", "tasks/cancel")
#: Upper bound for a task to reach a state it is expected to reach quickly. Only a
#: failure waits this long; it is generous because a loaded CI machine (load 10 on
#: 2 cores) can take seconds for each Temporal call a leg or a read makes.
WITHIN_S = 60.0

ALICE = {"client_id": "app", "sub": "alice", "scopes": []}
#: Callers that are not alice: another user of the same client, the same user
#: name under another client, and the client itself without a user.
STRANGERS = {
    "bob": {"client_id": "app", "sub": "bob", "scopes": []},
    "alice-other-app": {"client_id": "other-app", "sub": "alice", "scopes": []},
    "app-no-sub": {"client_id": "app", "scopes": []},
}


def verifier(**extra: dict[str, Any]) -> StaticTokenVerifier:
    return StaticTokenVerifier(tokens={"alice": ALICE, **STRANGERS, **extra})


def question(key: str = "confirm", request_state: str | None = None) -> Any:
    """The guard pattern: end the leg by asking the client to confirm."""
    return mcp_types.InputRequiredResult(
        input_requests={
            key: mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message="Go ahead?", requested_schema={"type": "object", "properties": {}}
                )
            )
        },
        request_state=request_state,
    )


ACCEPT = {"action": "accept", "content": {}}


def build_server(
    extension: TemporalTasks,
    *,
    auth: StaticTokenVerifier | None = None,
    gate: asyncio.Event | None = None,
) -> FastMCP:
    """Three task tools: one that runs until ``gate`` opens, one that asks, one that ends."""
    mcp = FastMCP("isolation", auth=auth)
    mcp.add_extension(extension)
    gate = gate or asyncio.Event()

    @mcp.tool(task=True)
    async def hold() -> str:
        await asyncio.wait_for(gate.wait(), 30)
        return "released"

    @mcp.tool(task=True)
    async def confirm(ctx: Context) -> str:
        return question() if not ctx.input_responses else "confirmed"

    @mcp.tool(task=True)
    async def done(data: str = "") -> str:
        return f"finished ({len(data)} chars)"

    return mcp


async def create(raw: RawMcp, tool: str, arguments: dict[str, Any] | None = None) -> str:
    result = await raw.result("tools/call", {"name": tool, "arguments": arguments or {}})
    assert result["resultType"] == "task", result
    return result["taskId"]


async def wait_for(raw: RawMcp, task_id: str, *statuses: str) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WITHIN_S
    while True:
        task = await raw.result("tasks/get", {"taskId": task_id})
        if task["status"] in statuses:
            return task
        assert loop.time() < deadline, f"never reached {statuses}: {task}"
        await asyncio.sleep(0.05)


def unknown_id() -> str:
    """An id of the same shape as a real one (32 URL-safe characters) that names nothing."""
    return secrets.token_urlsafe(24)


def without(error: dict[str, Any], task_id: str) -> dict[str, Any]:
    """The error object with the echoed task id replaced by a placeholder."""
    return json.loads(json.dumps(error).replace(task_id, "<id>"))


def assert_clean(body: dict[str, Any]) -> None:
    text = json.dumps(body)
    assert "Traceback" not in text and 'File "' not in text, text


async def assert_invisible(caller: RawMcp, task_id: str, outstanding_key: str) -> None:
    """``caller`` gets, for ``task_id``, byte for byte the error of an id that names nothing.

    The update carries a valid answer for the task's real outstanding key: the
    most tempting request a stranger could make.
    """
    for method in METHODS:
        stranger_id = unknown_id()

        def params(tid: str, method: str = method) -> dict[str, Any]:
            if method == "tasks/update":
                return {"taskId": tid, "inputResponses": {outstanding_key: ACCEPT}}
            return {"taskId": tid}

        stolen_status, stolen = await caller.call(method, params(task_id))
        unknown_status, unknown = await caller.call(method, params(stranger_id))
        assert unknown.get("error", {}).get("code") == -32602, unknown
        assert "error" in stolen, f"{method} on another scope's task answered {stolen}"
        assert without(stolen["error"], task_id) == without(unknown["error"], stranger_id)
        assert stolen_status == unknown_status
        assert_clean(stolen)


@dataclass
class Owned:
    """One owner's tasks, and what the owner saw of them before anyone else tried."""

    owner: RawMcp
    running: str
    parked: str
    finished: str
    parked_view: dict[str, Any]
    finished_view: dict[str, Any]

    @property
    def key(self) -> str:
        (key,) = self.parked_view["inputRequests"]
        return key

    async def assert_untouched(self) -> None:
        running = await self.owner.result("tasks/get", {"taskId": self.running})
        assert running["status"] == "working", running
        parked = await self.owner.result("tasks/get", {"taskId": self.parked})
        assert parked["status"] == "input_required"
        assert parked["inputRequests"] == self.parked_view["inputRequests"]
        assert parked["lastUpdatedAt"] == self.parked_view["lastUpdatedAt"]
        finished = await self.owner.result("tasks/get", {"taskId": self.finished})
        assert finished == self.finished_view


async def assert_all_invisible(callers: list[RawMcp], owned: Owned) -> None:
    """Every caller, on each of the owner's tasks, concurrently (strangers change nothing)."""
    await asyncio.gather(
        *(
            assert_invisible(caller, task_id, owned.key)
            for caller in callers
            for task_id in (owned.running, owned.parked, owned.finished)
        )
    )


async def parked_and_finished(owner: RawMcp) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    parked, finished = await create(owner, "confirm"), await create(owner, "done")
    parked_view = await wait_for(owner, parked, "input_required")
    finished_view = await wait_for(owner, finished, "completed")
    return parked, finished, parked_view, finished_view


# -- 1. context parity: session id and session-scoped state -----------------------------------


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


# -- 2. a token that expired before a leg runs is not installed -------------------------------


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


# -- 3. isolation: another scope's lookups are indistinguishable from unknown ids -------------


async def test_other_scopes_get_the_unknown_id_error_with_a_worker_up(
    temporal_tasks: BuildTasks,
) -> None:
    """Alice's running, parked and finished tasks are invisible to bob, to alice under
    another client, to her client without a user, and to anonymous callers; an
    anonymous caller's tasks are invisible to authenticated ones. Nothing they
    tried changed any task."""
    gate = asyncio.Event()
    secured = build_server(temporal_tasks(), auth=verifier(), gate=gate)
    # An open front end on the same queue: anonymous callers; its legs run on
    # the secured server's worker.
    anonymous_front = build_server(temporal_tasks(run_worker=False), gate=gate)
    try:
        async with run_server_async(secured) as url, run_server_async(anonymous_front) as open_url:
            alice, anonymous = RawMcp(url, bearer="alice"), RawMcp(open_url)
            owned = []
            for owner in (alice, anonymous):
                running = await create(owner, "hold")
                parked, finished, parked_view, finished_view = await parked_and_finished(owner)
                await wait_for(owner, running, "working")
                owned.append(Owned(owner, running, parked, finished, parked_view, finished_view))
            alices, anonymous_owned = owned

            strangers = [RawMcp(url, bearer=name) for name in STRANGERS] + [anonymous]
            await assert_all_invisible(strangers, alices)
            await assert_all_invisible([alice, RawMcp(url, bearer="bob")], anonymous_owned)

            for mine in owned:
                await mine.assert_untouched()
            gate.set()
            for mine in owned:
                await wait_for(mine.owner, mine.running, "completed")
    finally:
        gate.set()


async def test_other_scopes_get_the_unknown_id_error_with_no_worker_up(
    temporal_tasks: BuildTasks,
) -> None:
    """The same answers when nobody polls the task queue: the parked and finished
    tasks were made while a worker was up, the running ones by a front end alone
    (they never ran), and every answer comes from Temporal's records."""
    owners: dict[str, tuple[str, str, dict[str, Any], dict[str, Any]]] = {}
    secured = build_server(temporal_tasks(), auth=verifier())
    anonymous_front = build_server(temporal_tasks(run_worker=False))
    async with run_server_async(secured) as url, run_server_async(anonymous_front) as open_url:
        owners["alice"] = await parked_and_finished(RawMcp(url, bearer="alice"))
        owners["anonymous"] = await parked_and_finished(RawMcp(open_url))
    # The worker is gone. Two stateless front ends on the same queue:
    secured_front = build_server(temporal_tasks(run_worker=False), auth=verifier())
    anonymous_front = build_server(temporal_tasks(run_worker=False))
    async with (
        run_server_async(secured_front) as url,
        run_server_async(anonymous_front) as open_url,
    ):
        alice, anonymous = RawMcp(url, bearer="alice"), RawMcp(open_url)
        owned = {
            name: Owned(owner, await create(owner, "done"), *owners[name])
            for name, owner in (("alice", alice), ("anonymous", anonymous))
        }
        strangers = [RawMcp(url, bearer=name) for name in STRANGERS] + [anonymous]
        await assert_all_invisible(strangers, owned["alice"])
        await assert_all_invisible([alice, RawMcp(url, bearer="bob")], owned["anonymous"])
        for mine in owned.values():
            await mine.assert_untouched()
            await mine.owner.result("tasks/cancel", {"taskId": mine.running})


@pytest.mark.parametrize(
    ("owner", "intruder"),
    [
        pytest.param(
            {"client_id": "app", "sub": "auth0|42", "scopes": []},
            {"client_id": "app|auth0", "sub": "42", "scopes": []},
            id="delimiter-in-sub",
        ),
        pytest.param(
            {"client_id": "app", "sub": "alice", "scopes": []},
            {"client_id": "app|alice", "scopes": []},
            id="delimiter-in-client-id-without-sub",
        ),
        pytest.param(
            {"client_id": "app", "sub": "alice", "iss": "https://idp-a.example", "scopes": []},
            {"client_id": "app", "sub": "alice", "iss": "https://idp-b.example", "scopes": []},
            id="same-client-and-sub-other-issuer",
        ),
    ],
)
async def test_distinct_principals_never_share_a_scope(
    temporal_tasks: BuildTasks, owner: dict[str, Any], intruder: dict[str, Any]
) -> None:
    """Scopes are distinct for distinct principals (FastMCP's ``(client_id, iss, sub)``)."""
    mcp = build_server(
        temporal_tasks(), auth=StaticTokenVerifier(tokens={"owner": owner, "intruder": intruder})
    )
    async with run_server_async(mcp) as url:
        mine = RawMcp(url, bearer="owner")
        finished = await create(mine, "done")
        await wait_for(mine, finished, "completed")
        _, body = await RawMcp(url, bearer="intruder").call("tasks/get", {"taskId": finished})
    assert body.get("error", {}).get("code") == -32602, f"the intruder read the task: {body}"


# -- 4. bad input -----------------------------------------------------------------------------


class _Missing:
    """Marks a param left out of the request."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


async def test_malformed_updates_are_invalid_params_and_change_nothing(
    temporal_tasks: BuildTasks,
) -> None:
    """``inputResponses`` that is not an object, or an answer that is not a valid result
    for the outstanding key, is ``-32602`` with no traceback, and the task still waits
    for exactly the same keys; a valid answer afterwards still completes it."""
    async with run_server_async(build_server(temporal_tasks())) as url:
        raw = RawMcp(url)
        task_id = await create(raw, "confirm")
        parked = await wait_for(raw, task_id, "input_required")
        (key,) = parked["inputRequests"]
        cases: list[Any] = [
            [],
            [{key: ACCEPT}],
            "accept",
            None,
            MISSING,
            42,
            {key: {"action": 5}},
            {key: {"action": "maybe"}},
            {key: {"action": "accept", "content": 5}},
            {key: {"action": "accept", "content": {"nested": {"too": "deep"}}}},
            {key: "accept"},
            {key: 5},
            {key: None},
            {key: [ACCEPT]},
            {key: {}},
            {key: {"action": 5}, "not-outstanding": ACCEPT},  # one bad answer rejects all
        ]
        for case in cases:
            params: dict[str, Any] = {"taskId": task_id}
            if case is not MISSING:
                params["inputResponses"] = case
            status, body = await raw.call("tasks/update", params)
            assert body.get("error", {}).get("code") == -32602, (case, status, body)
            assert status < 500, (case, status)
            assert_clean(body)
            now = await raw.result("tasks/get", {"taskId": task_id})
            assert now["status"] == "input_required", (case, now)
            assert now["inputRequests"] == parked["inputRequests"], case
            assert now["lastUpdatedAt"] == parked["lastUpdatedAt"], case
        await raw.result("tasks/update", {"taskId": task_id, "inputResponses": {key: ACCEPT}})
        final = await wait_for(raw, task_id, "completed", "failed")
    assert final["result"]["structuredContent"] == {"result": "confirmed"}


async def workflow_ids_on(
    temporal_client: TemporalClient, task_queue: str, expected: str
) -> list[str]:
    """The workflows on ``task_queue`` once the one for ``expected`` is visible."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WITHIN_S
    query = f"TaskQueue = '{task_queue}'"
    while True:
        ids = [w.id async for w in temporal_client.list_workflows(query)]
        if any(workflow_id.endswith(expected) for workflow_id in ids) or loop.time() > deadline:
            return ids
        await asyncio.sleep(0.1)


#: A 2 MB ceiling keeps these payloads small (the default is 100 MiB, see
#: ``tests/test_large_payloads.py`` for payloads past Temporal's own 2 MB).
LIMIT = 2_000_000


async def test_oversized_arguments_are_rejected_up_front_and_start_nothing(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient, task_queue: str
) -> None:
    """A 2.5 MB argument (over the server's ``max_payload_bytes``) is a clear ``-32602``;
    no workflow is started for it (a valid call afterwards is the only one)."""
    async with run_server_async(build_server(temporal_tasks(max_payload_bytes=LIMIT))) as url:
        raw = RawMcp(url)
        status, body = await raw.call(
            "tools/call", {"name": "done", "arguments": {"data": "x" * 2_500_000}}
        )
        assert body.get("error", {}).get("code") == -32602, (status, str(body)[:500])
        assert "too large" in body["error"]["message"]
        assert len(json.dumps(body)) < 2_000  # the argument is not echoed back
        assert_clean(body)
        valid = await create(raw, "done", {"data": "x"})
        await wait_for(raw, valid, "completed")
    ids = await workflow_ids_on(temporal_client, task_queue, valid)
    assert len(ids) == 1 and ids[0].endswith(valid), ids


async def test_an_oversized_answer_is_invalid_params_and_changes_nothing(
    temporal_tasks: BuildTasks,
) -> None:
    async with run_server_async(build_server(temporal_tasks(max_payload_bytes=LIMIT))) as url:
        raw = RawMcp(url)
        task_id = await create(raw, "confirm")
        parked = await wait_for(raw, task_id, "input_required")
        (key,) = parked["inputRequests"]
        huge = {"action": "accept", "content": {"text": "y" * 2_500_000}}
        status, body = await raw.call(
            "tasks/update", {"taskId": task_id, "inputResponses": {key: huge}}
        )
        now = await raw.result("tasks/get", {"taskId": task_id})
        await raw.result("tasks/cancel", {"taskId": task_id})
    assert now["status"] == "input_required" and now["inputRequests"] == parked["inputRequests"]
    assert body.get("error", {}).get("code") == -32602, (status, body)
    assert "too large" in body["error"]["message"]


async def test_arguments_and_answers_over_the_limit_together_fail_clearly(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient
) -> None:
    """Either the answer is refused (``-32602``, task unchanged) or the task fails with a
    clear error soon after; it must not ack and then hang. Each is under the limit,
    together they are over it (the workflow's own check of the leg's input)."""
    server = FastMCP("big-answers")
    server.add_extension(temporal_tasks(max_payload_bytes=LIMIT))

    @server.tool(task=True)
    async def confirm_big(data: str, ctx: Context) -> str:
        return question() if not ctx.input_responses else f"confirmed {len(data)}"

    task_id = ""
    try:
        async with run_server_async(server) as url:
            raw = RawMcp(url)
            task_id = await create(raw, "confirm_big", {"data": "d" * 1_200_000})
            parked = await wait_for(raw, task_id, "input_required")
            (key,) = parked["inputRequests"]
            answer = {"action": "accept", "content": {"text": "y" * 1_200_000}}
            _, body = await raw.call(
                "tasks/update", {"taskId": task_id, "inputResponses": {key: answer}}
            )
            if "error" in body:
                assert body["error"]["code"] == -32602, body
                now = await raw.result("tasks/get", {"taskId": task_id})
                assert now["inputRequests"] == parked["inputRequests"]
                return
            # Acked, then stuck (the hang this guards against) fails in ``wait_for``.
            now = await wait_for(raw, task_id, "failed", "completed")
            assert now["status"] == "failed", now
            assert "too large" in now["error"]["message"]
    finally:
        if task_id:
            handle = temporal_client.get_workflow_handle(f"mcp-anon-{task_id}")
            with contextlib.suppress(Exception):
                await handle.terminate("test cleanup")


# -- 5. property: random tasks/* params never break the server or the tasks -------------------


class Target(enum.Enum):
    PARKED = "parked"
    FINISHED = "finished"
    ABSENT = "absent"  # no taskId at all


class Key(enum.Enum):
    OUTSTANDING = "outstanding"


_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
json_values = st.recursive(
    _json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=10,
)
#: Answers that are often close to valid results, and sometimes valid.
near_answers = st.fixed_dictionaries(
    {"action": st.sampled_from(["accept", "decline", "cancel"]) | json_values},
    optional={"content": json_values, "_meta": json_values},
)
input_responses = json_values | st.dictionaries(
    st.sampled_from([Key.OUTSTANDING]) | st.text(max_size=12),
    near_answers | json_values,
    max_size=3,
)
targets = st.sampled_from(list(Target))
RESERVED = {"taskId", "inputResponses", "_meta"}
_ELICIT_RESULT = TypeAdapter(mcp_types.ElicitResult)


def is_valid_answer(value: Any) -> bool:
    try:
        _ELICIT_RESULT.validate_python(value)
    except PydanticValidationError:
        return False
    return True


@dataclass(repr=False)
class FuzzTarget:
    raw: RawMcp
    parked: str
    key: str
    parked_view: dict[str, Any]
    finished: str
    finished_view: dict[str, Any]

    async def assert_untouched(self) -> None:
        parked = await self.raw.result("tasks/get", {"taskId": self.parked})
        assert parked["status"] == "input_required"
        assert parked["inputRequests"] == self.parked_view["inputRequests"]
        finished = await self.raw.result("tasks/get", {"taskId": self.finished})
        assert finished == self.finished_view

    def __repr__(self) -> str:  # hypothesis prints it with every falsifying example
        return f"FuzzTarget(parked={self.parked!r}, finished={self.finished!r})"


@pytest.fixture
async def fuzz_target(temporal_tasks: BuildTasks) -> AsyncIterator[FuzzTarget]:
    """One server, one parked and one finished task, shared by every example."""
    async with run_server_async(build_server(temporal_tasks())) as url:
        raw = RawMcp(url)
        parked, finished, parked_view, finished_view = await parked_and_finished(raw)
        (key,) = parked_view["inputRequests"]
        yield FuzzTarget(raw, parked, key, parked_view, finished, finished_view)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    method=st.sampled_from(METHODS),
    # About half the examples aim at the two real tasks (or omit the id).
    task_id=st.one_of(targets, targets, st.text(max_size=80), json_values),
    responses=st.just(MISSING) | input_responses,
    extra=st.dictionaries(st.text(max_size=10).filter(lambda k: k not in RESERVED), json_values),
)
async def test_random_tasks_params_are_answered_or_invalid_and_change_nothing(
    fuzz_target: FuzzTarget, method: str, task_id: Any, responses: Any, extra: dict[str, Any]
) -> None:
    """Whatever the params, the answer is a valid result or ``-32602`` (never ``-32603``,
    never a traceback), and the parked task keeps its keys, the finished one its result.

    The ``Mcp-Name`` header is sent as a correct client would (encoded with the SDK's
    ``encode_header_value``) whenever ``taskId`` is a string, so a header mismatch
    (``-32020``) would be a server bug too.
    """
    target = fuzz_target
    real = {Target.PARKED: target.parked, Target.FINISHED: target.finished}
    # Cancelling the parked task is a legitimate request that changes it; not fuzz.
    assume(not (method == "tasks/cancel" and task_id is Target.PARKED))
    if isinstance(responses, dict):
        responses = {target.key if k is Key.OUTSTANDING else k: v for k, v in responses.items()}
        # A valid answer for the outstanding key would (rightly) resume the task.
        assume(not (task_id is Target.PARKED and is_valid_answer(responses.get(target.key))))
    params: dict[str, Any] = dict(extra)
    if task_id is not Target.ABSENT:
        params["taskId"] = real[task_id] if isinstance(task_id, Target) else task_id
    if responses is not MISSING:
        params["inputResponses"] = responses
    headers = {}
    if isinstance(params.get("taskId"), str):
        headers["Mcp-Name"] = encode_header_value(params["taskId"])

    status, body = await target.raw.call(method, params, headers=headers)

    aimed = task_id.value if isinstance(task_id, Target) else type(task_id).__name__
    event(f"{method} at {aimed}: {'error' if 'error' in body else 'result'}")
    assert_clean(body)
    assert status < 500, (status, body)
    if "error" in body:
        assert body["error"]["code"] == -32602, body
    else:
        result = body["result"]
        assert isinstance(params.get("taskId"), str) and params["taskId"] in real.values()
        if method == "tasks/get":
            assert result["taskId"] == params["taskId"]
        else:
            assert set(result) - {"_meta"} == {"resultType"}, result
    await target.assert_untouched()
