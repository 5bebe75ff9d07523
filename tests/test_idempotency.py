"""Idempotent task creation (``server.protocol.idempotency``): one key, one task, one body run.

Real FastMCP servers over streamable HTTP (raw JSON-RPC, ``tests.wire.RawMcp``)
and the in-memory transport, tasks on the session's Temporal dev server:

- the same key twice -- by header, by ``_meta``, concurrently, after the task
  finished -- answers the same task id, and the body ran once; after the task
  expired, the key starts a new one;
- the same key with other arguments or another tool is ``-32602`` naming the
  conflict, and starts nothing;
- keys belong to their caller: another principal's (or anonymous session's)
  identical key creates its own task and hears of no conflict;
- malformed keys are ``-32602`` and start nothing.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.protocol.idempotency import IDEMPOTENCY_KEY_META
from fastmcp_temporal.server.tasks import task_records
from tests.helpers import eventually
from tests.ports import run_server_async
from tests.raw_tasks import assert_clean, wait_for, workflow_ids_on
from tests.wire import RawMcp

BuildTasks = Callable[..., TemporalTasks]

TOKENS = {
    "alice": {"client_id": "app", "sub": "alice", "scopes": []},
    "bob": {"client_id": "app", "sub": "bob", "scopes": []},
}


def counting_server(extension: TemporalTasks, runs: Counter[str], **server: Any) -> FastMCP:
    """``tally(label)`` counts its body runs per label; ``other`` is another tool."""
    mcp = FastMCP("idempotency", **server)
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def tally(label: str) -> str:
        runs[label] += 1
        return f"ran {label}"

    @mcp.tool(task=True)
    async def other(label: str) -> str:
        return label

    return mcp


def keyed(
    how: str, key: str, arguments: dict[str, Any], tool: str = "tally"
) -> tuple[dict[str, Any], dict[str, str]]:
    """``tools/call`` params and headers that carry ``key`` the way ``how`` says."""
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if how == "meta":
        params["_meta"] = {IDEMPOTENCY_KEY_META: key}
        return params, {}
    if how == "quoted-header":
        return params, {"Idempotency-Key": f'"{key}"'}
    return params, {"Idempotency-Key": key}


async def create_keyed(
    raw: RawMcp, key: str, arguments: dict[str, Any], *, how: str = "header", **extra: Any
) -> dict[str, Any]:
    params, headers = keyed(how, key, arguments, **extra)
    status, body = await raw.call("tools/call", params, headers=headers)
    assert body.get("result", {}).get("resultType") == "task", (status, body)
    return body["result"]


async def call_error(
    raw: RawMcp, params: dict[str, Any], headers: dict[str, str] | None = None
) -> dict[str, Any]:
    status, body = await raw.call("tools/call", params, headers=headers)
    assert "error" in body, (status, body)
    assert_clean(body)
    return body["error"]


@pytest.mark.parametrize("how", ["header", "quoted-header", "meta"])
async def test_the_same_key_twice_is_one_task_and_one_run_even_after_it_finished(
    temporal_tasks: BuildTasks, how: str
) -> None:
    """A retry gets the first call's task id, while it runs and once it completed;
    the body ran once."""
    runs: Counter[str] = Counter()
    async with run_server_async(counting_server(temporal_tasks(), runs)) as url:
        raw = RawMcp(url)
        first = await create_keyed(raw, "order-7f3a", {"label": "a"}, how=how)
        retry = await create_keyed(raw, "order-7f3a", {"label": "a"}, how=how)
        assert retry["taskId"] == first["taskId"]
        assert retry["createdAt"] == first["createdAt"]
        final = await wait_for(raw, first["taskId"], "completed", "failed")
        assert final["status"] == "completed", final
        after = await create_keyed(raw, "order-7f3a", {"label": "a"}, how=how)
        fresh = await create_keyed(raw, "order-8b21", {"label": "a"}, how=how)
        await wait_for(raw, fresh["taskId"], "completed")
    assert after["taskId"] == first["taskId"]
    assert after["status"] == "completed"
    assert fresh["taskId"] != first["taskId"]
    assert runs["a"] == 2  # once for each key


async def test_concurrent_calls_with_one_key_start_one_task(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient, task_queue: str
) -> None:
    """Ten calls at once with one key: one task id for all, one workflow, one run."""
    runs: Counter[str] = Counter()
    async with run_server_async(counting_server(temporal_tasks(), runs)) as url:
        raw = RawMcp(url)
        created = await asyncio.gather(
            *(create_keyed(raw, "burst-1", {"label": "b"}) for _ in range(10))
        )
        (task_id,) = {task["taskId"] for task in created}
        await wait_for(raw, task_id, "completed")
    assert runs["b"] == 1
    ids = await workflow_ids_on(temporal_client, task_queue, task_id)
    assert len(ids) == 1, ids


async def test_the_same_key_for_another_call_is_a_conflict_and_starts_nothing(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient, task_queue: str
) -> None:
    """Other arguments or another tool under a used key: ``-32602`` naming the conflict."""
    runs: Counter[str] = Counter()
    async with run_server_async(counting_server(temporal_tasks(), runs)) as url:
        raw = RawMcp(url)
        first = await create_keyed(raw, "k-conflict", {"label": "c"})
        for tool, arguments in (("tally", {"label": "d"}), ("other", {"label": "c"})):
            params, headers = keyed("header", "k-conflict", arguments, tool=tool)
            error = await call_error(raw, params, headers)
            assert error["code"] == -32602, error
            assert "Idempotency key conflict" in error["message"]
            assert "k-conflict" in error["message"]
        await wait_for(raw, first["taskId"], "completed")
    assert runs == Counter({"c": 1})
    ids = await workflow_ids_on(temporal_client, task_queue, first["taskId"])
    assert len(ids) == 1, ids


async def test_keys_belong_to_their_caller(
    temporal_tasks: BuildTasks,
) -> None:
    """Bob's key equal to alice's creates bob's own task, even for other arguments (no
    conflict: he learns nothing of hers); anonymous callers' keys are per ``Mcp-Session-Id``."""
    runs: Counter[str] = Counter()
    mcp = counting_server(
        temporal_tasks(scope_secret="a secret of at least sixteen bytes"),
        runs,
        auth=StaticTokenVerifier(tokens=TOKENS),
    )
    async with run_server_async(mcp) as url:
        alice, bob = RawMcp(url, bearer="alice"), RawMcp(url, bearer="bob")
        alices = await create_keyed(alice, "shared-key", {"label": "alice"})
        bobs = await create_keyed(bob, "shared-key", {"label": "bob"})
        bobs_again = await create_keyed(bob, "shared-key", {"label": "bob"})
        assert bobs["taskId"] != alices["taskId"]
        assert bobs_again["taskId"] == bobs["taskId"]
        _, peek = await bob.call("tasks/get", {"taskId": alices["taskId"]})
        assert peek["error"]["code"] == -32602  # still not bob's to read
        await wait_for(alice, alices["taskId"], "completed")
        await wait_for(bob, bobs["taskId"], "completed")
    assert runs == Counter({"alice": 1, "bob": 1})

    runs.clear()
    async with run_server_async(counting_server(temporal_tasks(), runs)) as url:
        raw = RawMcp(url)
        by_session = {}
        for session in ("sess-one", "sess-two", "sess-one"):
            params, headers = keyed("header", "anon-key", {"label": session})
            headers["Mcp-Session-Id"] = session
            _, body = await raw.call("tools/call", params, headers=headers)
            by_session.setdefault(session, set()).add(body["result"]["taskId"])
        assert len(by_session["sess-one"]) == 1
        assert by_session["sess-one"].isdisjoint(by_session["sess-two"])
        for (task_id,) in by_session.values():
            await wait_for(raw, task_id, "completed")
    assert runs == Counter({"sess-one": 1, "sess-two": 1})


@pytest.mark.parametrize(
    ("meta_key", "header", "expected"),
    [
        (None, "", "visible ASCII"),
        (None, "x" * 256, "visible ASCII"),
        (None, "has space", "visible ASCII"),
        ("", None, "visible ASCII"),
        (42, None, "must be a string"),
        ({"key": "k"}, None, "must be a string"),
        (None, None, "must be a string"),  # an explicit null
        ("meta-key", "header-key", "different keys"),
    ],
)
async def test_malformed_keys_are_invalid_params_and_start_nothing(
    temporal_tasks: BuildTasks,
    temporal_client: TemporalClient,
    task_queue: str,
    meta_key: Any,
    header: str | None,
    expected: str,
) -> None:
    runs: Counter[str] = Counter()
    async with run_server_async(counting_server(temporal_tasks(), runs)) as url:
        raw = RawMcp(url)
        params: dict[str, Any] = {"name": "tally", "arguments": {"label": "bad"}}
        if meta_key is not None or header is None:
            params["_meta"] = {IDEMPOTENCY_KEY_META: meta_key}
        headers = {"Idempotency-Key": header} if header is not None else None
        error = await call_error(raw, params, headers)
        assert error["code"] == -32602, error
        assert expected in error["message"], error
        valid = await create_keyed(raw, "a-good-key", {"label": "good"})
        await wait_for(raw, valid["taskId"], "completed")
    ids = await workflow_ids_on(temporal_client, task_queue, valid["taskId"])
    assert len(ids) == 1, ids
    assert runs == Counter({"good": 1})


async def test_a_meta_key_works_on_the_in_memory_transport(temporal_tasks: BuildTasks) -> None:
    """Without HTTP the key travels in ``_meta``: ``call_tool_task(meta=...)`` twice, one task."""
    runs: Counter[str] = Counter()
    mcp = counting_server(temporal_tasks(), runs)
    async with Client(mcp) as client:
        meta = {IDEMPOTENCY_KEY_META: "in-memory-1"}
        first = await call_tool_task(client, "tally", {"label": "m"}, meta=meta)
        again = await call_tool_task(client, "tally", {"label": "m"}, meta=meta)
        assert again.task_id == first.task_id
        assert (await first.result()).data == "ran m"
    assert runs["m"] == 1


async def test_after_its_task_expired_a_key_starts_a_new_task(
    temporal_tasks: BuildTasks, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the TTL the key is free again: the same call runs the body again, as a new
    task under the same (derived) id; the expired one no longer exists for anyone."""
    monkeypatch.setattr(task_records, "FINISHED_GRACE", timedelta(0))
    runs: Counter[str] = Counter()
    async with run_server_async(counting_server(temporal_tasks(ttl_ms=1500), runs)) as url:
        raw = RawMcp(url)
        first = await create_keyed(raw, "expiring", {"label": "e"})
        seen = set()
        for _ in range(150):  # until it has expired (once finished, 1.5 s after creation)
            _, read = await raw.call("tasks/get", {"taskId": first["taskId"]})
            if "error" in read:
                break
            seen.add(read["result"]["status"])
            await asyncio.sleep(0.2)
        assert read["error"]["code"] == -32602, read
        assert "failed" not in seen and runs["e"] == 1, seen
        again = await create_keyed(raw, "expiring", {"label": "e"})
        assert again["taskId"] == first["taskId"]
        assert again["createdAt"] != first["createdAt"]
        # Not by reading it: the new task too is gone 1.5 s after creation once it has
        # finished, which a loaded machine's next poll can miss.
        await eventually(lambda: runs["e"] == 2, timeout=60)
    assert runs["e"] == 2, "once per task"
