"""Logouts and hostile session ids, through a round-robin load balancer (issue 49, item 6).

Two front ends (real processes, one scope secret, no worker: the legs run in this
test's worker) behind ``tests.processes.round_robin_proxy`` (a real HTTP proxy
process, no affinity, steered with ``Fleet.on``), as ``tests/test_fleet.py`` runs them:

- ``DELETE`` through one front end (by hand on 2025-06-18, and by FastMCP's
  ``Client`` as it closes its session), then the other front end, which had served
  the session: refused (``404``) within a second or so, polled;
- issue 49's hostile ids (``tests/test_session_ids.py``: huge, altered, another
  caller's, another deployment's, expired) and a logged-out one, each sent to both
  front ends while another caller's session is used beside them: ``404`` every time,
  never a ``500``, no traceback, the other caller answered throughout (what they
  cost that caller: ``bench/session_ids.py``).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import DevServer
from tests.fleet import Fleet, fleet_fixture, legs_worker, running_fleet  # noqa: F401 (the fixture)
from tests.test_session_ids import delete, hostile_ids, until_refused
from tests.test_session_seal import HUGE
from tests.test_sessions import UNKNOWN, Answer, Handshake


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
        await fleet.logged(lambda entry: entry["method"] == "GET")
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
