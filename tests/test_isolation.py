"""Who may touch a task: another scope's lookups are indistinguishable from unknown ids.

Everything here runs over streamable HTTP against real FastMCP servers whose
tasks run on the session's Temporal dev server, with real bearer tokens
(``StaticTokenVerifier``), speaking raw JSON-RPC (``tests.wire.RawMcp``):
another scope's ``tasks/get|update|cancel`` gets exactly the unknown-id error,
for running, parked and finished tasks, with or without a worker up.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

from tests.ports import run_server_async
from tests.raw_tasks import (
    STRANGERS,
    BuildTasks,
    Owned,
    assert_all_invisible,
    build_server,
    create,
    parked_and_finished,
    verifier,
    wait_for,
)
from tests.wire import RawMcp


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
