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
  delivers nothing;
- ``DELETE`` through one front end (by hand, and by FastMCP's ``Client`` as it
  closes), then the other front end, which had served the session: refused
  (``404``) within a second or so, polled;
- issue 49's hostile ids (``tests/test_session_ids.py``: huge, altered, another
  caller's, another deployment's, expired) and a logged-out one, each sent to both
  front ends while another caller's session is used beside them: ``404`` every time,
  never a ``500``, no traceback, the other caller answered throughout (what they cost
  that caller: ``bench/session_ids.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx2
import mcp_types
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowExecutionStatus
from temporalio.worker import Worker

from fastmcp_temporal import DevServer, McpTasksPlugin
from fastmcp_temporal.server.protocol import live_calls
from fastmcp_temporal.server.protocol.live_calls import LiveCalls, QuestionRef
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from tests.fleet import SECRET, Fleet, RawSession, running_fleet
from tests.helpers import eventually
from tests.processes.session_server import tools
from tests.test_session_ids import delete, hostile_ids, until_refused
from tests.test_session_seal import HUGE
from tests.test_sessions import UNKNOWN, Answer, Handshake


def legs_worker(temporal_client: TemporalClient, task_queue: str) -> Worker:
    """The legs' worker; it tells Temporal of a leg's heartbeat at least every second (as
    the embedded worker does), so a cancelled leg hears it within about a second."""
    return Worker(
        temporal_client,
        task_queue=task_queue,
        plugins=[McpTasksPlugin(tools)],
        max_heartbeat_throttle_interval=timedelta(seconds=1),
    )


@pytest.fixture
async def fleet(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> AsyncIterator[Fleet]:
    async with (
        legs_worker(temporal_client, task_queue),
        running_fleet(temporal_server.address, task_queue, tmp_path) as running,
    ):
        yield running


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
        cancel = await _logged(fleet, lambda entry: entry.get("rpc") == "notifications/cancelled")
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


async def _logged(fleet: Fleet, picks: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The proxy's log entry of the one request ``picks`` picks, once it has passed."""
    for _ in range(600):
        found = [entry for entry in await fleet.log() if picks(entry)]
        if found:
            (entry,) = found
            return entry
        await asyncio.sleep(0.05)
    raise AssertionError(f"no such request passed the proxy: {await fleet.log()}")


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


# -- logouts and hostile session ids, through the proxy --------------------------------


async def through(fleet: Fleet, upstream: int, client: Handshake) -> Answer:
    """A ``ping`` in ``client``'s session through the proxy to front end ``upstream``
    (steered there, with nobody else calling)."""
    assert client.session_id is not None
    pinging = await fleet.on(
        upstream, client.session_id, lambda: client.request(fleet.url, "ping", {})
    )
    ((_, answer),) = pinging
    return answer


async def test_a_logout_through_one_front_end_is_honoured_through_the_other(
    fleet: Fleet,
) -> None:
    alice, kept = Handshake(fleet.http), Handshake(fleet.http)
    await alice.initialize(fleet.url)
    await kept.initialize(fleet.url)
    assert alice.session_id is not None
    before = await through(fleet, 1, alice)  # front end 1 serves (and caches) the session
    logging_out = await fleet.on(0, alice.session_id, lambda: delete(fleet.http, fleet.url, alice))
    right_after = await through(fleet, 0, alice)
    on_the_other = await until_refused(lambda: through(fleet, 1, alice))
    assert before.status == 200
    assert logging_out == [(0, 200)]
    assert (right_after.status, right_after.frames) == (404, [UNKNOWN])
    assert (on_the_other.status, on_the_other.frames) == (404, [UNKNOWN])
    # A logout ends its own session only.
    assert [(await through(fleet, upstream, kept)).status for upstream in (0, 1)] == [200, 200]
    assert alice.session_id in {
        entry["session"] for entry in await fleet.log() if entry["method"] == "DELETE"
    }


async def test_the_sdk_clients_logout_through_one_front_end_is_honoured_through_the_other(
    fleet: Fleet,
) -> None:
    """FastMCP's ``Client`` sends ``DELETE`` as it closes its session (its handshake
    offers 2025-11-25 whatever it is asked: this session speaks that). Front end 1 has
    served the session, to the client and to another presenting its id; the ``DELETE``
    reaches front end 0; that other client, through front end 1 again, is refused."""
    transport = StreamableHttpTransport(fleet.url)
    async with Client(transport, mode="legacy") as client:
        session_id = transport.get_session_id()
        assert session_id is not None and client.protocol_version is not None
        reuse = Handshake(fleet.http, session_id=session_id, protocol=client.protocol_version)
        # The SDK's GET stream has taken its turn: nothing else goes out unasked.
        await _logged(fleet, lambda entry: entry["method"] == "GET")
        pinged = await fleet.on(1, session_id, client.ping)
        before = await through(fleet, 1, reuse)
        await fleet.steer(0)  # for the DELETE that closing sends
    (closing,) = [entry for entry in await fleet.log() if entry["method"] == "DELETE"]
    refused = await until_refused(lambda: through(fleet, 1, reuse))
    assert pinged == [(1, True)] and before.status == 200
    assert (closing["session"], closing["upstream"]) == (session_id, 0)
    assert (refused.status, refused.frames) == (404, [UNKNOWN])


async def ping_and_delete(
    fleet: Fleet, upstream: int, client: Handshake
) -> list[tuple[str, int, int, list[dict[str, Any]] | None]]:
    """A ``ping``, then a ``DELETE``, in ``client``'s session, each sent until it reaches
    front end ``upstream``: each answer's request, front end, status and frames."""
    assert client.session_id is not None
    pings = await fleet.on(
        upstream, client.session_id, lambda: client.request(fleet.url, "ping", {})
    )
    deletes = await fleet.on(
        upstream, client.session_id, lambda: delete(fleet.http, fleet.url, client)
    )
    return [("ping", landed, answer.status, answer.frames) for landed, answer in pings] + [
        ("DELETE", landed, status, None) for landed, status in deletes
    ]


async def test_no_id_a_caller_builds_is_more_than_an_unknown_session_through_the_proxy(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """Each hostile id as ``ping`` and ``DELETE`` to each front end (steered; carol's
    requests may take a steered turn, so it is sent again until it gets there), while
    carol pings her own session through the proxy all along."""
    now = time.time()
    async with (
        legs_worker(temporal_client, task_queue),
        running_fleet(temporal_server.address, task_queue, tmp_path, auth=True) as fleet,
    ):
        alice, logged_out, carol = (
            Handshake(fleet.http, user=u) for u in ("alice", "alice", "carol")
        )
        for client in (alice, logged_out, carol):
            await client.initialize(fleet.url)
        assert alice.session_id is not None and logged_out.session_id is not None
        # Issue 49's initialize: too big to seal, the SDK's own session on front end 0.
        huge = Handshake(fleet.http, user="alice")
        await fleet.steer(0)
        huge.session_id = (await huge.request(fleet.url, "initialize", HUGE)).session_id
        assert huge.session_id is not None
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        initializing = await fleet.on(
            0,
            huge.session_id,
            lambda: fleet.http.post(fleet.url, json=initialized, headers=huge.headers()),
        )
        assert [(landed, response.status_code) for landed, response in initializing] == [(0, 202)]
        logging_out = await fleet.on(
            0, logged_out.session_id, lambda: delete(fleet.http, fleet.url, logged_out)
        )
        assert logging_out == [(0, 200)]
        assert (await until_refused(lambda: through(fleet, 1, logged_out))).status == 404
        hostile = {
            "issue 49's initialize, elsewhere": huge.session_id,
            **hostile_ids(alice.session_id, now),
            "logged out": logged_out.session_id,
        }
        carols: list[Answer] = []
        beside = asyncio.Event()

        async def keep_pinging() -> None:
            while not beside.is_set():
                carols.append(await carol.request(fleet.url, "ping", {}))
                await asyncio.sleep(0.02)

        pinging = asyncio.create_task(keep_pinging())
        answers: list[tuple[str, int, int, list[dict[str, Any]] | None]] = []
        try:
            for what, session_id in hostile.items():
                hostile_client = Handshake(fleet.http, user="alice", session_id=session_id)
                for upstream in (1,) if what.endswith("elsewhere") else (0, 1):
                    for request, landed, status, frames in await ping_and_delete(
                        fleet, upstream, hostile_client
                    ):
                        answers.append((f"{request} {what}", landed, status, frames))
        finally:
            beside.set()
            await pinging
        alices = [await through(fleet, upstream, alice) for upstream in (0, 1)]
        carol_served_by = set(await fleet.served_by(str(carol.session_id)))
        logs = [front_end.output() for front_end in fleet.front_ends]
    for what, landed, status, frames in answers:
        if what.endswith("elsewhere") and landed == 0:
            assert status in (200, 404), (what, status)  # a resend that reached its own front end
            continue
        assert status == 404, (what, landed, status, frames)
        assert frames is None or frames == [UNKNOWN], (what, landed, frames)
    assert carols and [answer.status for answer in carols] == [200] * len(carols)
    assert carol_served_by == {0, 1}
    assert [answer.status for answer in alices] == [200, 200]  # alice's own session lives on
    for log in logs:
        assert "Traceback" not in log, log[-3000:]


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
