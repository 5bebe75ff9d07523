"""A fleet behind a plain round-robin load balancer: answers and cancels reach their task.

Two front ends (real processes, one scope secret, no worker: the legs run in this
test's worker) behind ``tests.processes.round_robin_proxy`` (a real HTTP proxy
process, no affinity), on the 2025-06-18 wire by hand and with the MCP SDK's
``ClientSession``:

- two durable calls held by two front ends ask at once; each question goes out
  under an id of its own (the SDK numbers both ``1``), and each answer, sent
  through the *other* front end, completes its own question and no other;
- an altered answer and a stale one (its round over) change nothing;
- the SDK client's answer to a question, sent through the other front end;
- ``notifications/cancelled`` for a durable call, sent through the other front
  end (by hand, and by the SDK's client as it abandons its call), cancels its task,
  and the call held by the first one ends as cancelled;
- the same wire id sent by another caller, or by the caller in another session,
  delivers nothing.

Logouts and hostile session ids through the same proxy: ``tests/test_fleet_sessions.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from pathlib import Path
from typing import Any

import httpx2
import mcp_types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowExecutionStatus

from fastmcp_temporal import DevServer
from fastmcp_temporal.server.protocol import live_calls
from fastmcp_temporal.server.protocol.live_calls import LiveCalls, QuestionRef
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from tests.fleet import (  # noqa: F401 (fleet_fixture: the fixture)
    SECRET,
    Fleet,
    RawSession,
    fleet_fixture,
    legs_worker,
    running_fleet,
)
from tests.helpers import eventually


def asks(frame: dict[str, Any]) -> bool:
    return frame.get("method") == "elicitation/create"


def answer(question: dict[str, Any], note: str) -> dict[str, Any]:
    content = {"action": "accept", "content": {"note": note}}
    return {"jsonrpc": "2.0", "id": question["id"], "result": content}


def text(result: dict[str, Any]) -> str:
    (block,) = result["result"]["content"]
    return str(block["text"])


async def test_each_answer_completes_its_own_question_through_the_other_front_end(
    fleet: Fleet,
) -> None:
    client = RawSession(fleet.http, fleet.url)
    try:
        await client.initialize()
        await fleet.steer(0)
        call_a = await client.call("tools/call", {"name": "confirm", "arguments": {"item": "A"}})
        call_b = await client.call("tools/call", {"name": "confirm", "arguments": {"item": "B"}})
        question_a, question_b = await call_a.frame(asks), await call_b.frame(asks)
        assert question_a["params"]["message"] == "Confirm A?"
        assert question_b["params"]["message"] == "Confirm B?"
        # Each front end's SDK numbered its question 1; on the wire each has its own id.
        assert question_a["id"] != question_b["id"]
        assert {question_a["id"][:4], question_b["id"][:4]} == {"ft1."}

        # Altered: changes nothing (202, as for any answer nobody awaits).
        wire_id = question_a["id"]
        flipped = wire_id[:-3] + ("A" if wire_id[-3] != "A" else "B") + wire_id[-2:]
        assert await client.post(answer({"id": flipped}, "altered")) == 202
        assert await client.post(answer({"id": question_b["id"] + "x"}, "altered")) == 202

        # A's answer through B's front end (1), B's through A's (0).
        await fleet.steer(1)
        assert await client.post(answer(question_a, "yes A")) == 202
        assert text(await call_a.result()) == "A: accept yes A"
        # Front end 0 stopped asking once the task had its answer; its SDK's courtesy
        # cancel of the question names it as the client knows it.
        cancelled = [f for f in call_a.frames if f.get("method") == "notifications/cancelled"]
        assert [frame["params"]["requestId"] for frame in cancelled] == [question_a["id"]]
        # Stale: A's round is over; it completes nothing, B's question least of all.
        assert await client.post(answer(question_a, "stale")) == 202
        await fleet.steer(0)
        assert await client.post(answer(question_b, "yes B")) == 202
        assert text(await call_b.result()) == "B: accept yes B"
    finally:
        await client.aclose()

    log = await fleet.log()
    calls = {
        entry["params"]["arguments"]["item"]: entry
        for entry in log
        if entry.get("rpc") == "tools/call"
    }
    answers = [entry for entry in log if entry.get("rpc") == "response"]
    assert (calls["A"]["upstream"], calls["B"]["upstream"]) == (0, 1)
    first = {entry["id"]: entry["upstream"] for entry in reversed(answers)}  # the real ones
    assert (first[question_a["id"]], first[question_b["id"]]) == (1, 0)  # the other front end


async def test_an_inline_question_numbered_alike_never_completes_a_durable_one(
    fleet: Fleet,
) -> None:
    """Front end 0 asks a durable call's question, front end 1 a plain tool's inline
    ``ctx.elicit`` (both the SDK's request 1 of their session). The inline answer sent
    to front end 0 completes nothing there (the SDK's 1 went out under its wire id);
    inline answers reach only the front end that asked, as documented."""
    client = RawSession(fleet.http, fleet.url)
    try:
        await client.initialize()
        await fleet.steer(0)
        durable = await client.call("tools/call", {"name": "confirm", "arguments": {"item": "E"}})
        inline = await client.call("tools/call", {"name": "ask_inline", "arguments": {}})
        durable_question, inline_question = await durable.frame(asks), await inline.frame(asks)
        assert inline_question["id"] == 1 and str(durable_question["id"]).startswith("ft1.")
        inline_answer = {"action": "accept", "content": {"value": "inline's"}}
        await fleet.steer(0)
        assert await client.post({"jsonrpc": "2.0", "id": 1, "result": inline_answer}) == 202
        await fleet.steer(0)
        assert await client.post(answer(durable_question, "durable's")) == 202
        assert text(await durable.result()) == "E: accept durable's"
        await fleet.steer(1)
        assert await client.post({"jsonrpc": "2.0", "id": 1, "result": inline_answer}) == 202
        assert text(await inline.result()) == "inline: accept inline's"
    finally:
        await client.aclose()


async def test_the_sdk_client_answers_through_the_other_front_end(fleet: Fleet) -> None:
    asked: list[str] = []

    async def on_elicit(_: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        asked.append(params.message)
        held_by = await fleet.served(lambda entry: entry.get("rpc") == "tools/call")
        await fleet.steer(1 - held_by)  # the answer goes to the front end that did not ask
        return mcp_types.ElicitResult(action="accept", content={"note": "from the SDK"})

    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http,
        streamable_http_client(fleet.url, http_client=http) as (read, write),
        ClientSession(read, write, elicitation_callback=on_elicit) as session,
    ):
        await session.initialize()
        confirmed = await session.call_tool("confirm", {"item": "C"})
    assert asked == ["Confirm C?"]
    assert [block.text for block in confirmed.content] == ["C: accept from the SDK"]  # type: ignore[union-attr]
    log = await fleet.log()
    (call,) = [entry for entry in log if entry.get("rpc") == "tools/call"]
    (reply,) = [entry for entry in log if entry.get("rpc") == "response"]
    assert reply["upstream"] != call["upstream"]


async def test_a_cancel_through_the_other_front_end_cancels_the_task(
    fleet: Fleet, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    marker = tmp_path / "lingering"
    client = RawSession(fleet.http, fleet.url)
    try:
        await client.initialize()
        await fleet.steer(0)
        call = await client.call(
            "tools/call", {"name": "linger", "arguments": {"marker": str(marker)}}
        )
        await eventually(marker.exists, timeout=60)
        await fleet.steer(1)
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": call.request_id, "reason": "the person pressed stop"},
        }
        assert await client.post(cancel) == 202
        ended = await call.result()
    finally:
        await client.aclose()
    assert ended["result"]["isError"] is True
    assert "was cancelled" in text(ended)
    # The call ends once its task has: cancelled, by the front end the cancel reached.
    (workflow,) = [
        execution async for execution in temporal_client.list_workflows(f'TaskQueue="{task_queue}"')
    ]
    description = await temporal_client.get_workflow_handle(workflow.id).describe()
    assert description.status == WorkflowExecutionStatus.CANCELED
    log = await fleet.log()
    served = {entry.get("rpc"): entry["upstream"] for entry in log if entry.get("rpc")}
    assert (served["tools/call"], served["notifications/cancelled"]) == (0, 1)


async def test_the_sdk_client_cancels_through_the_other_front_end(
    fleet: Fleet, temporal_client: TemporalClient, tmp_path: Path
) -> None:
    """The SDK's ``ClientSession`` sends ``notifications/cancelled`` when its call is
    abandoned; through the other front end, it cancels the task the first one holds."""
    marker = tmp_path / "lingering"
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http,
        streamable_http_client(fleet.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        calling = asyncio.create_task(session.call_tool("linger", {"marker": str(marker)}))
        await eventually(marker.exists, timeout=60)
        held_by = await fleet.served(lambda entry: entry.get("rpc") == "tools/call")
        await fleet.steer(1 - held_by)
        calling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await calling
        cancel = await fleet.logged(lambda entry: entry.get("rpc") == "notifications/cancelled")
    (call,) = [entry for entry in await fleet.log() if entry.get("rpc") == "tools/call"]
    assert cancel["upstream"] == 1 - held_by and cancel["params"]["requestId"] == call["id"]
    calls = LiveCalls()
    calls.keyed(SECRET.encode())
    task_id = calls.call_task_id(call["session"], None, str(call["id"]))
    handle = temporal_client.get_workflow_handle(workflow_id_for(task_id, None, SECRET.encode()))
    for _ in range(600):  # the leg hears the cancel at its next heartbeat
        if (await handle.describe()).status == WorkflowExecutionStatus.CANCELED:
            break
        await asyncio.sleep(0.1)
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED


async def test_another_sessions_or_callers_answer_changes_nothing(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """The wire id is bound to the session and the caller: the same id sent by bob, or by
    alice in another session, delivers nothing (202, logged); alice's own answer does."""
    async with (
        legs_worker(temporal_client, task_queue),
        running_fleet(temporal_server.address, task_queue, tmp_path, auth=True) as fleet,
    ):
        alice = RawSession(fleet.http, fleet.url, user="alice")
        alice_elsewhere = RawSession(fleet.http, fleet.url, user="alice")
        bob = RawSession(fleet.http, fleet.url, user="bob")
        try:
            for client in (alice, alice_elsewhere, bob):
                await client.initialize()
            await fleet.steer(0)
            call = await alice.call("tools/call", {"name": "confirm", "arguments": {"item": "D"}})
            question = await call.frame(asks)
            await fleet.steer(1)
            assert await bob.post(answer(question, "bob's")) == 202
            assert await alice_elsewhere.post(answer(question, "another session's")) == 202
            assert await alice.post(answer(question, "alice's")) == 202
            assert text(await call.result()) == "D: accept alice's"
        finally:
            await alice.aclose()


async def test_a_request_id_used_again_in_a_session_is_the_clients_error(fleet: Fleet) -> None:
    """A durable call's task id is derived from its request id: a second call under the same
    id in the same session (JSON-RPC forbids it) is ``-32600``, and nothing else runs."""
    client = RawSession(fleet.http, fleet.url)
    try:
        await client.initialize()
        counted = {"name": "count_to", "arguments": {"n": 1}}
        first = await client.call("tools/call", counted)
        assert text(await first.result()) == "counted to 1"
        again = {"jsonrpc": "2.0", "id": first.request_id, "method": "tools/call"}
        response = await fleet.http.post(
            fleet.url, json={**again, "params": counted}, headers=client.headers()
        )
    finally:
        await client.aclose()
    lines = response.text.splitlines()
    frames = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    (error,) = [frame["error"] for frame in frames or [response.json()] if "error" in frame]
    assert error["code"] == -32600 and "already used" in error["message"]


async def test_an_answer_to_nothing_asked_changes_nothing(fleet: Fleet) -> None:
    """A forged wire id on a front end that asked nothing: 202, nothing delivered, no 500."""
    client = RawSession(fleet.http, fleet.url)
    await client.initialize()
    for forged in ("ft1.", "ft1.AAAA.BBBB", "ft1." + "A" * 5000, "ft1.!!.??"):
        assert await client.post(answer({"id": forged}, "forged")) == 202
    # The session still serves.
    assert await client.post({"jsonrpc": "2.0", "method": "notifications/initialized"}) == 202


# -- the ids themselves --------------------------------------------------------------


def keyed(secret: str = SECRET) -> LiveCalls:
    calls = LiveCalls()
    calls.keyed(secret.encode())
    return calls


def test_an_answer_id_opens_only_for_its_session_caller_and_deployment() -> None:
    ref = QuestionRef("t" * 32, "1.confirm", "round")
    wire_id = keyed().answer_id(ref, "s2.session", '{"sub":"alice"}')
    assert keyed().open_answer_id(wire_id, "s2.session", '{"sub":"alice"}') == ref  # a replica
    assert keyed().open_answer_id(wire_id, "s2.other", '{"sub":"alice"}') is None
    assert keyed().open_answer_id(wire_id, "s2.session", '{"sub":"bob"}') is None
    assert keyed().open_answer_id(wire_id, "s2.session", None) is None
    assert keyed("another deployment!").open_answer_id(wire_id, "s2.session", None) is None
    assert LiveCalls().open_answer_id(wire_id, "s2.session", '{"sub":"alice"}') is None
    for altered in (wire_id + "A", wire_id[:-1], wire_id.replace(".", "..", 2), "ft1." * 600):
        assert keyed().open_answer_id(altered, "s2.session", '{"sub":"alice"}') is None


def test_a_calls_task_id_is_the_same_on_every_front_end_of_the_deployment() -> None:
    task_id = keyed().call_task_id("s2.session", None, "7")
    assert task_id == keyed().call_task_id("s2.session", None, "7")
    assert re.fullmatch("[0-9a-f]{48}", task_id)
    others = {
        keyed().call_task_id("s2.session", None, "8"),
        keyed().call_task_id("s2.other", None, "7"),
        keyed().call_task_id("s2.session", '{"sub":"alice"}', "7"),
        keyed("another deployment!").call_task_id("s2.session", None, "7"),
    }
    assert task_id not in others and len(others) == 4


def test_a_front_end_keeps_a_bounded_number_of_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live_calls, "MAX_SESSIONS_KEPT", 3)
    calls = LiveCalls()
    for n in range(3):
        calls.pair(f"s2.{n}", f"local-{n}")
    assert calls.local_session("s2.0") == "local-0"  # used: now the most recent
    calls.pair("s2.3", "local-3")
    assert calls.local_session("s2.1") is None and calls.sealed_session("local-1") is None
    assert [calls.local_session(f"s2.{n}") for n in (0, 2, 3)] == ["local-0", "local-2", "local-3"]
