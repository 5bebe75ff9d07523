"""Hostile session ids against a fleet, and logouts across it (issue 49, items 1 and 4).

Two front ends as real processes (``tests.processes.session_server``: uvicorn, bearer
auth, no worker) share one scope secret and one Temporal, as behind a balancer
without affinity. Every id a caller can build that is not a live session of its own
answers ``404 Session not found`` on both, never a ``500`` and never a traceback in
their logs: the ``initialize`` of issue 49 (3.8 MB, which sealed into a 4 kB id that
cost every later request 0.4 s), an ``s2.`` id of the previous release sealing it,
an altered id, another caller's, another deployment's, an expired one (also ``s2.``),
one logged out. A live ``s2.`` id is still served (a rolling upgrade). ``DELETE`` on
A is honoured by B too, and by a front end started after it (polled; the latency is
in ``bench/session_ids.py``), through a logout workflow that never asks for a worker.
What these ids cost a front end and another caller beside them: the same benchmark.
The same ids and logouts through a round-robin proxy: ``tests/test_fleet_sessions.py``.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Awaitable, Callable

import httpx
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient

from fastmcp_temporal.server.protocol.session_logouts import LOGOUT_WORKFLOW, logout_workflow_id
from fastmcp_temporal.server.protocol.session_seal import SessionSeal
from tests.test_session_seal import (
    DAY_S,
    HELLO,
    HUGE,
    caller,
    deployment_key,
    legacy_id,
    opening,
)
from tests.test_sessions import (  # noqa: F401 (front_end: the fixture)
    OTHER_SECRET,
    SECRET,
    UNKNOWN,
    Answer,
    Handshake,
    StartFrontEnd,
    front_end,
    http_client,
)


async def test_no_id_a_caller_builds_is_more_than_an_unknown_session(
    front_end: StartFrontEnd,  # noqa: F811
) -> None:
    a, b = await front_end("a", auth=True), await front_end("b", auth=True)
    now = time.time()
    async with http_client() as http:
        alice = Handshake(http, user="alice")
        await alice.initialize(a.url)
        assert alice.session_id is not None
        huge = Handshake(http, user="alice")
        await huge.initialize(a.url, HUGE["capabilities"])
        assert huge.session_id is not None and not SessionSeal.minted(huge.session_id)
        hostile = {
            "issue 49's initialize, elsewhere": huge.session_id,
            **hostile_ids(alice.session_id, now),
        }
        answers: dict[str, Answer] = {}
        deleted: dict[str, int] = {}
        for what, session_id in hostile.items():
            assert session_id is not None, what
            for name, front in (("a", a), ("b", b)):
                if what.endswith("elsewhere") and name == "a":
                    continue  # the SDK's own session, on the front end that opened it
                client = Handshake(http, user="alice", session_id=session_id)
                answers[f"{what} on {name}"] = await client.request(front.url, "ping", {})
                deleted[f"{what} on {name}"] = await delete(http, front.url, client)
        live_s2 = Handshake(http, user="alice", session_id=legacy_id(HELLO, now, user="alice"))
        served_s2 = await live_s2.request(b.url, "tools/list", {})
        served = await alice.request(b.url, "ping", {})
    for what, answer in answers.items():
        assert (answer.status, answer.frames) == (404, [UNKNOWN]), what
        assert deleted[what] == 404, what
    assert served_s2.status == 200  # a session a previous release opened lives on
    assert (served.status, served.frames[0].get("result")) == (200, {})
    for front in (a, b):
        assert "Traceback" not in front.process.output(), front.process.output()[-3000:]


async def test_a_logout_on_one_front_end_is_honoured_by_every_front_end(
    front_end: StartFrontEnd,  # noqa: F811
    temporal_client: TemporalClient,
) -> None:
    a, b = await front_end("a", auth=True), await front_end("b", auth=True)
    async with http_client() as http:
        alice, kept = Handshake(http, user="alice"), Handshake(http, user="alice")
        await alice.initialize(a.url)
        await kept.initialize(a.url)
        before = await alice.request(b.url, "ping", {})  # B serves (and caches) it
        assert before.status == 200
        assert await delete(http, a.url, alice) == 200
        right_after = await alice.request(a.url, "ping", {})
        on_b = await until_refused(lambda: alice.request(b.url, "ping", {}))
        later = await front_end("started-after-the-logout", auth=True)
        on_later = await until_refused(lambda: alice.request(later.url, "ping", {}))
        others = await kept.request(later.url, "ping", {})
    assert (right_after.status, right_after.frames) == (404, [UNKNOWN])
    assert (on_b.status, on_b.frames) == (404, [UNKNOWN])
    assert (on_later.status, on_later.frames) == (404, [UNKNOWN])
    assert others.status == 200  # a logout ends its own session only
    assert alice.session_id is not None
    logout_id = logout_workflow_id(nonce_of(alice.session_id), 0).rsplit("-", 1)[0]
    query = f"WorkflowType = '{LOGOUT_WORKFLOW}' AND WorkflowId STARTS_WITH '{logout_id}-'"
    (logout,) = [execution async for execution in temporal_client.list_workflows(query)]
    history = await temporal_client.get_workflow_handle(logout.id).fetch_history()
    # No workflow task: a logout never asks for a worker (these front ends have none).
    assert [event.event_type for event in history.events] == [
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
    ]


def hostile_ids(alice_id: str, now: float) -> dict[str, str]:
    """Ids alice can build or get at ``now`` that are no live session of hers, given one
    that is (``alice_id``, an ``s3.`` id): what each is, and the id."""
    middle = len(alice_id) // 2
    flipped = "A" if alice_id[middle] != "A" else "B"
    expired_seal = SessionSeal(deployment_key(), max_age_s=60, clock=lambda: now - 3600)
    return {
        "issue 49's initialize, sealed s2": legacy_id(HUGE, now, user="alice"),
        "altered": alice_id[:middle] + flipped + alice_id[middle + 1 :],
        "another caller's": legacy_id(HELLO, now, user="bob"),
        "another deployment's": SessionSeal.for_deployment(OTHER_SECRET.encode(), DAY_S).mint(
            opening(HELLO), caller("alice")
        ),
        "expired": expired_seal.mint(opening(HELLO), caller("alice")),
        "expired s2": legacy_id(HELLO, now - DAY_S - 60, user="alice"),
        "too long": "s3." + "A" * 20_000,
    }


async def delete(http: httpx.AsyncClient, url: str, client: Handshake) -> int:
    return (await http.delete(url, headers=client.headers())).status_code


async def until_refused(ask: Callable[[], Awaitable[Answer]], deadline_s: float = 60) -> Answer:
    """The first answer of ``ask`` (one request) that is not a ``200``, asked every 0.1 s
    (a logout reaches the other front ends through Temporal, in about a second)."""
    deadline = time.monotonic() + deadline_s
    while True:
        answer = await ask()
        if answer.status != 200 or time.monotonic() > deadline:
            return answer
        await asyncio.sleep(0.1)


def nonce_of(session_id: str) -> bytes:
    """What names an ``s3.`` id in its logout (after the 16 bytes of its header)."""
    encoded = session_id.removeprefix("s3.")
    return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))[16:28]
