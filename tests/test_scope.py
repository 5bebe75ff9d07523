"""Whose task it is: scopes under custom token verifiers, and keyed scope tags.

Real FastMCP servers over streamable HTTP, real bearer tokens, tasks on the
session's Temporal dev server:

- a verifier that leaves ``AccessToken.subject`` unset and puts ``sub`` only in
  the claims still separates the users of one client id;
- the workflow id's scope tag is an HMAC under the server's secret: front ends
  with the same secret agree, another secret finds nothing, and nobody without
  it can compute a user's tag; tasks created before a secret was configured
  (unkeyed tags) stay readable by their owners, and only by them;
- the embedded default generates its secret once, privately, in its data dir.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.server.auth import AccessToken, TokenVerifier
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.server.core import scope
from tests.ports import run_server_async
from tests.raw_tasks import (
    ACCEPT,
    Owned,
    assert_all_invisible,
    assert_invisible,
    build_server,
    create,
    parked_and_finished,
    wait_for,
    workflow_ids_on,
)
from tests.wire import RawMcp

BuildTasks = Callable[..., TemporalTasks]

SECRET = "correct horse battery staple, keyed"
OTHER_SECRET = "another deployment's secret value"


class OneClientVerifier(TokenVerifier):
    """Every user of one OAuth client (``app``); the token names the user.

    ``where`` says how the user reaches FastMCP: as ``AccessToken.subject`` (as
    FastMCP's JWT verifier does), or only as ``claims["sub"]`` (as many custom
    verifiers do, and ``fastmcp_tasks`` reads).
    """

    def __init__(self, where: str) -> None:
        super().__init__()
        self.where = where

    async def verify_token(self, token: str) -> AccessToken | None:
        if not token.startswith("user-"):
            return None
        user = token.removeprefix("user-")
        if self.where == "subject":
            return AccessToken(token=token, client_id="app", scopes=[], subject=user, claims={})
        return AccessToken(token=token, client_id="app", scopes=[], claims={"sub": user})


def alice_scope() -> str:
    return json.dumps(["app", None, "alice"], separators=(",", ":"))


def keyed_tag(secret: str, scope_value: str) -> str:
    return hmac.new(secret.encode(), scope_value.encode(), hashlib.sha256).hexdigest()[:16]


@pytest.mark.parametrize("where", ["subject", "claims-sub-only"])
async def test_users_of_one_client_never_share_a_scope(
    temporal_tasks: BuildTasks, where: str
) -> None:
    """Alice's running, parked and finished tasks are invisible to bob (same client id),
    whether the verifier sets ``subject`` or only ``claims["sub"]``; nothing bob tried
    changed them, and each user still reads their own."""
    gate = asyncio.Event()
    mcp = build_server(
        temporal_tasks(scope_secret=SECRET), auth=OneClientVerifier(where), gate=gate
    )
    try:
        async with run_server_async(mcp) as url:
            alice, bob = RawMcp(url, bearer="user-alice"), RawMcp(url, bearer="user-bob")
            running = await create(alice, "hold")
            parked, finished, parked_view, finished_view = await parked_and_finished(alice)
            owned = Owned(alice, running, parked, finished, parked_view, finished_view)
            await assert_all_invisible([bob], owned)
            await owned.assert_untouched()
            bobs = await create(bob, "done")
            await wait_for(bob, bobs, "completed")
            _, stolen = await alice.call("tasks/get", {"taskId": bobs})
            assert stolen.get("error", {}).get("code") == -32602, stolen
            gate.set()
            await wait_for(alice, running, "completed")
    finally:
        gate.set()


async def test_scope_tags_are_keyed_and_front_ends_with_the_secret_agree(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient, task_queue: str
) -> None:
    """The workflow id carries ``HMAC(secret, scope)``, not ``sha256(scope)``: a replica
    with the same secret reads and answers the task, one with another secret gets the
    unknown-id error."""
    verifier = OneClientVerifier("subject")
    keyed = build_server(temporal_tasks(scope_secret=SECRET), auth=verifier)
    replica = build_server(temporal_tasks(scope_secret=SECRET, run_worker=False), auth=verifier)
    foreign = build_server(
        temporal_tasks(scope_secret=OTHER_SECRET, run_worker=False), auth=verifier
    )
    async with (
        run_server_async(keyed) as url,
        run_server_async(replica) as replica_url,
        run_server_async(foreign) as foreign_url,
    ):
        alice = RawMcp(url, bearer="user-alice")
        task_id = await create(alice, "confirm")
        parked = await wait_for(alice, task_id, "input_required")
        (key,) = parked["inputRequests"]

        _, elsewhere = await RawMcp(foreign_url, bearer="user-alice").call(
            "tasks/get", {"taskId": task_id}
        )
        assert elsewhere.get("error", {}).get("code") == -32602, elsewhere
        on_replica = RawMcp(replica_url, bearer="user-alice")
        assert (await on_replica.result("tasks/get", {"taskId": task_id}))["status"] == (
            "input_required"
        )
        await on_replica.result(
            "tasks/update", {"taskId": task_id, "inputResponses": {key: ACCEPT}}
        )
        final = await wait_for(alice, task_id, "completed")
    assert final["result"]["structuredContent"] == {"result": "confirmed"}

    (workflow_id,) = await workflow_ids_on(temporal_client, task_queue, task_id)
    assert workflow_id == f"mcp-{keyed_tag(SECRET, alice_scope())}-{task_id}"
    assert scope.unkeyed_tag(alice_scope()) not in workflow_id


async def test_tasks_created_before_the_secret_stay_readable_by_their_owner_only(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient, task_queue: str
) -> None:
    """A front end without a secret made alice's tasks under unkeyed tags; after the
    secret is configured, alice still reads, answers and cancels them, bob does not see
    them, and new tasks get keyed ids."""
    verifier = OneClientVerifier("claims-sub-only")
    unkeyed = build_server(temporal_tasks(), auth=verifier)
    async with run_server_async(unkeyed) as url:
        alice = RawMcp(url, bearer="user-alice")
        parked, finished, parked_view, finished_view = await parked_and_finished(alice)
        to_cancel = await create(alice, "confirm")
        await wait_for(alice, to_cancel, "input_required")
    (key,) = parked_view["inputRequests"]

    keyed = build_server(temporal_tasks(scope_secret=SECRET), auth=verifier)
    async with run_server_async(keyed) as url:
        alice, bob = RawMcp(url, bearer="user-alice"), RawMcp(url, bearer="user-bob")
        for task_id in (parked, finished, to_cancel):
            await assert_invisible(bob, task_id, key)
        assert await alice.result("tasks/get", {"taskId": finished}) == finished_view
        assert (await alice.result("tasks/get", {"taskId": parked}))["inputRequests"] == (
            parked_view["inputRequests"]
        )
        await alice.result("tasks/update", {"taskId": parked, "inputResponses": {key: ACCEPT}})
        answered = await wait_for(alice, parked, "completed")
        await alice.result("tasks/cancel", {"taskId": to_cancel})
        await wait_for(alice, to_cancel, "cancelled")
        fresh = await create(alice, "done")
        await wait_for(alice, fresh, "completed")
    assert answered["result"]["structuredContent"] == {"result": "confirmed"}
    ids = await workflow_ids_on(temporal_client, task_queue, fresh)
    assert f"mcp-{keyed_tag(SECRET, alice_scope())}-{fresh}" in ids
    assert f"mcp-{scope.unkeyed_tag(alice_scope())}-{finished}" in ids


def test_the_embedded_secret_is_generated_once_private_and_reused(tmp_path: Path) -> None:
    data_dir = tmp_path / "embedded"
    first = scope.embedded_secret(data_dir)
    path = data_dir / scope.SECRET_FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(first) >= 32
    assert scope.embedded_secret(data_dir) == first  # the next start tags alike
    assert sorted(p.name for p in data_dir.iterdir()) == [scope.SECRET_FILE_NAME]
    assert scope.embedded_secret(tmp_path / "another") != first


def test_a_configured_secret_wins_and_a_short_one_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(scope.SCOPE_SECRET_ENV, raising=False)
    assert TemporalTasks()._options.scope_key() is None
    monkeypatch.setenv(scope.SCOPE_SECRET_ENV, OTHER_SECRET)
    assert TemporalTasks()._options.scope_key() == OTHER_SECRET.encode()
    assert TemporalTasks(scope_secret=SECRET)._options.scope_key() == SECRET.encode()
    with pytest.raises(ValueError, match="too short"):
        TemporalTasks(scope_secret="short")
    monkeypatch.setenv(scope.SCOPE_SECRET_ENV, "short")
    with pytest.raises(ValueError, match=scope.SCOPE_SECRET_ENV):
        TemporalTasks()


async def test_the_embedded_default_keys_tags_with_its_data_dirs_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEMPORAL_ADDRESS", raising=False)
    monkeypatch.delenv(scope.SCOPE_SECRET_ENV, raising=False)
    extension = TemporalTasks(data_dir=tmp_path, task_queue="embedded-scope", ui=False)
    async with Client(build_server(extension)):
        assert extension.dev_server is not None
        in_use = extension.engine.scope_secret
    assert in_use is not None
    assert in_use == scope.embedded_secret(tmp_path)  # the file it generated, reused


async def test_an_authenticating_front_end_without_a_secret_says_so(
    temporal_tasks: BuildTasks, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No secret and no embedded server: unkeyed tags (documented), and a warning --
    never a secret invented for this process, which its replicas would not share."""
    monkeypatch.delenv(scope.SCOPE_SECRET_ENV, raising=False)
    extension = temporal_tasks()
    with caplog.at_level(logging.WARNING, logger="fastmcp_temporal"):
        async with Client(build_server(extension, auth=OneClientVerifier("subject"))):
            assert extension.engine.scope_secret is None
        async with Client(build_server(temporal_tasks())):  # anonymous only: nothing to key
            pass
    warnings = [r.getMessage() for r in caplog.records if "no scope secret" in r.getMessage()]
    assert len(warnings) == 1 and scope.SCOPE_SECRET_ENV in warnings[0], warnings
