"""What a session id can cost a front end, and another caller beside it; logouts across a fleet.

    .venv/bin/python bench/session_ids.py --requests 300 --pings 300 --rounds 3 \\
        --logouts 20 [--before-python BEFORE/.venv/bin/python] \\
        --out bench/results/session_ids.md

Two front ends of one deployment (``bench/support/session_front_end.py``: bearer auth,
no worker, one scope secret) on a Temporal dev server, as separate processes; raw
2025-06-18 JSON-RPC (``Mcp-Session-Id``), as Codex speaks it. Sessions open on A; B
is measured, as the front end a balancer sends the next request to.

- **CPU per request** (B's CPU seconds over ``--requests`` pings, one after the other):
  a normal id and the worst id a caller can get (an ``initialize`` as big as the seal
  takes: as many ``[]`` as ``MAX_SEALED_VALUES`` allows), each once seen by B (a cache lookup) and
  each new to B (a rebuild of the session there); and ids B refuses: issue 49's
  ``initialize`` of 3.8 MB sealed in an ``s2.`` id (4 kB), an expired id, a forged one
  of 4 kB. Ratios against the normal id seen before, and new against new.
- **Another caller's ``ping``** on B, ``--pings`` one after the other, p50 / p99:
  idle, beside four attackers sending issue 49's id in a loop, beside four who each
  ``initialize`` the worst session on A and send its id to B (a rebuild each), and,
  as the control, beside four sending a normal id B has seen (what four callers'
  requests cost whatever the id). Ratios against idle; the rows of each round run one
  after the other.
- **Logout**: ``DELETE`` on A, then B polled every 25 ms until it refuses the id,
  ``--logouts`` times: the time until B refuses.

With ``--before-python`` (an interpreter with an earlier release installed, e.g. a
venv of ``git archive 0f5f5ed``, the code issue 49 measured), a third front end of
that release joins the same deployment, and each round also measures it: CPU per
request of its own normal id and of issue 49's id (``--before-requests``), another
caller's ``ping`` idle and beside four sending issue 49's id (``--before-pings``).

Rounds interleave the rows; compare rows of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from support.measure import cpu_seconds, pct, ratio
from support.report import publish
from support.session_fleet import (
    HELLO,
    ISSUE_49,
    PROTOCOL,
    SECRET,
    Wire,
    front_ends,
    legacy_id,
    worst_capabilities,
)
from support.smoke import parse_args

from fastmcp_temporal import DevServer
from fastmcp_temporal.server.protocol.session_seal import SessionSeal


async def cpu_row(
    wire: Wire, url: str, pid: int, ids: list[str], statuses: Counter[str], row: str
) -> float:
    """B's CPU seconds per request over ``ids``, one after the other."""
    before = cpu_seconds(pid)
    for session_id in ids:
        statuses[f"{row}: {await wire.ping(url, session_id)}"] += 1
    return (cpu_seconds(pid) - before) / len(ids)


async def pings(wire: Wire, url: str, session_id: str, n: int) -> list[float]:
    latencies = []
    for _ in range(n):
        started = time.perf_counter()
        assert await wire.ping(url, session_id) == 200
        latencies.append(time.perf_counter() - started)
    return latencies


async def beside(
    attack: Callable[[], Any], wire: Wire, url: str, session_id: str, n: int
) -> list[float]:
    """The other caller's pings while four ``attack`` loops run."""
    stop = asyncio.Event()

    async def attacker() -> None:
        while not stop.is_set():
            await attack()

    attackers = [asyncio.create_task(attacker()) for _ in range(4)]
    try:
        await asyncio.sleep(0.2)
        return await pings(wire, url, session_id, n)
    finally:
        stop.set()
        await asyncio.gather(*attackers)


async def run(args: argparse.Namespace) -> str:
    data_dir = Path(tempfile.mkdtemp(prefix="session-ids-"))
    temporal = await DevServer.start(data_dir=data_dir, in_memory=True, ui=False)
    try:
        with front_ends(temporal.address, data_dir, args.before_python) as fronts:
            return await measure(args, fronts)
    finally:
        temporal.stop()


async def measure(args: argparse.Namespace, fronts: dict[str, tuple[str, int]]) -> str:
    (a, _), (b, b_pid) = fronts["a"], fronts["b"]
    worst = worst_capabilities()
    statuses: Counter[str] = Counter()
    cpu: dict[str, list[float]] = {}
    latency: dict[str, list[float]] = {}
    before = Before()
    limits = httpx.Limits(max_connections=20)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        mallory, carol = Wire(http, "mallory"), Wire(http, "carol")
        normal_id = await mallory.initialize(a)
        worst_id = await mallory.initialize(a, worst)
        assert SessionSeal.minted(worst_id), "the worst session must be sealed"
        issue_49_id = legacy_id({**HELLO, "capabilities": ISSUE_49}, "mallory")
        expired = SessionSeal(
            hmac.new(SECRET.encode(), b"fastmcp-temporal/mcp-session/v2", hashlib.sha256).digest(),
            60,
            clock=lambda: time.time() - 3600,
        ).seal(HELLO, PROTOCOL, None)
        forged = "s3." + "A" * 4000
        carols = await carol.initialize(a)
        await carol.ping(b, carols)
        for session_id in (normal_id, worst_id):
            await mallory.ping(b, session_id)  # B has seen them
        for round_ in range(args.rounds):
            fresh_normal = [await mallory.initialize(a) for _ in range(args.requests)]
            fresh_worst = [await mallory.initialize(a, worst) for _ in range(args.requests)]
            rows = {
                "normal id, seen before": [normal_id] * args.requests,
                "worst id, seen before": [worst_id] * args.requests,
                "normal id, new to B": fresh_normal,
                "worst id, new to B": fresh_worst,
                "issue 49's id (s2., 3.8 MB sealed)": [issue_49_id] * args.requests,
                "expired id": [expired] * args.requests,
                "forged id of 4 kB": [forged] * args.requests,
            }
            for row, ids in rows.items():
                cpu.setdefault(row, []).append(await cpu_row(mallory, b, b_pid, ids, statuses, row))

            async def issue_49() -> None:
                await mallory.ping(b, issue_49_id)

            async def worst_new_to_b() -> None:
                await mallory.ping(b, await mallory.initialize(a, worst))

            async def normal_seen() -> None:
                await mallory.ping(b, normal_id)

            latency.setdefault("idle", []).extend(await pings(carol, b, carols, args.pings))
            latency.setdefault("beside four sending a normal id (control)", []).extend(
                await beside(normal_seen, carol, b, carols, args.pings)
            )
            latency.setdefault("beside four sending issue 49's id", []).extend(
                await beside(issue_49, carol, b, carols, args.pings)
            )
            latency.setdefault("beside four sending worst ids new to B", []).extend(
                await beside(worst_new_to_b, carol, b, carols, args.pings)
            )
            if "before" in fronts:
                await measure_before(args, fronts["before"], http, issue_49_id, before)
            print(f"[session_ids] round {round_ + 1}: done", file=sys.stderr, flush=True)
        logouts = [await logout_latency(mallory, a, b) for _ in range(args.logouts)]
    return report(cpu, latency, logouts, statuses) + report_before(before)


@dataclass
class Before:
    """The rows of the front end of ``--before-python``, in the same run."""

    cpu: dict[str, list[float]] = field(default_factory=dict)
    latency: dict[str, list[float]] = field(default_factory=dict)
    statuses: Counter[str] = field(default_factory=Counter)
    ids: dict[str, str] = field(default_factory=dict)


async def measure_before(
    args: argparse.Namespace,
    front: tuple[str, int],
    http: httpx.AsyncClient,
    issue_49_id: str,
    before: Before,
) -> None:
    """One round of the before rows: its own normal id, issue 49's, another caller's pings."""
    url, pid = front
    mallory, carol = Wire(http, "mallory"), Wire(http, "carol")
    if not before.ids:
        before.ids = {"normal": await mallory.initialize(url), "carol": await carol.initialize(url)}
        await mallory.ping(url, issue_49_id)  # its rebuild: once, as in issue 49
    n = args.before_requests
    rows = {
        "normal id, seen before": [before.ids["normal"]] * n,
        "issue 49's id": [issue_49_id] * n,
    }
    for row, ids in rows.items():
        per_request = await cpu_row(mallory, url, pid, ids, before.statuses, row)
        before.cpu.setdefault(row, []).append(per_request)

    async def issue_49() -> None:
        await mallory.ping(url, issue_49_id)

    carols, n = before.ids["carol"], args.before_pings
    before.latency.setdefault("idle", []).extend(await pings(carol, url, carols, n))
    before.latency.setdefault("beside four sending issue 49's id", []).extend(
        await beside(issue_49, carol, url, carols, n)
    )


def report_before(before: Before) -> str:
    if not before.cpu:
        return ""
    median = {row: statistics.median(values) * 1e6 for row, values in before.cpu.items()}
    base = median["normal id, seen before"]
    lines = [
        "",
        "",
        "## Before: the front end of `--before-python`, in the same run",
        "",
        "| id | its CPU per request (µs) | x its normal id | answers |",
        "|---|---|---|---|",
    ]
    for row, value in median.items():
        answered = ", ".join(
            f"{key.rsplit(': ', 1)[1]} x{count}"
            for key, count in before.statuses.items()
            if key.rsplit(": ", 1)[0] == row
        )
        lines.append(f"| {row} | {value:.0f} | {ratio(value, base)} | {answered} |")
    lines += [
        "",
        "| another caller's ping, while | p50 (ms) | p99 (ms) | p50 x idle | p99 x idle |",
    ]
    lines.append("|---|---|---|---|---|")
    lines += latency_rows(before.latency)
    return "\n".join(lines)


def latency_rows(latency: dict[str, list[float]]) -> list[str]:
    """One table row per ``latency`` row: p50, p99, and each against the ``idle`` row's."""
    idle = latency["idle"]
    return [
        f"| {row} | {pct(values, 0.5):.2f} | {pct(values, 0.99):.2f} | "
        f"{ratio(pct(values, 0.5), pct(idle, 0.5))} | {ratio(pct(values, 0.99), pct(idle, 0.99))} |"
        for row, values in latency.items()
    ]


async def logout_latency(wire: Wire, a: str, b: str) -> float:
    session_id = await wire.initialize(a)
    assert await wire.ping(b, session_id) == 200
    assert await wire.delete(a, session_id) == 200
    deleted = time.perf_counter()
    while await wire.ping(b, session_id) == 200:
        assert time.perf_counter() - deleted < 60, "B never refused a logged-out id"
        await asyncio.sleep(0.025)
    return time.perf_counter() - deleted


def report(
    cpu: dict[str, list[float]],
    latency: dict[str, list[float]],
    logouts: list[float],
    statuses: Counter[str],
) -> str:
    median = {row: statistics.median(values) * 1e6 for row, values in cpu.items()}
    base = median["normal id, seen before"]
    new_base = median["normal id, new to B"]
    lines = [
        "## CPU per request on B (median of the rounds)",
        "",
        "| id | B's CPU per request (µs) | x normal, seen | x normal, new to B | answers |",
        "|---|---|---|---|---|",
    ]
    for row, value in median.items():
        answered = ", ".join(
            f"{key.rsplit(': ', 1)[1]} x{count}"
            for key, count in statuses.items()
            if key.rsplit(": ", 1)[0] == row
        )
        lines.append(
            f"| {row} | {value:.0f} | {ratio(value, base)} | {ratio(value, new_base)} "
            f"| {answered} |"
        )
    lines += [
        "",
        "## Another caller's ping on B (all rounds)",
        "",
        "| while | p50 (ms) | p99 (ms) | p50 x idle | p99 x idle |",
        "|---|---|---|---|---|",
    ]
    lines += latency_rows(latency)
    lines += [
        "",
        "## DELETE on A until B refuses the id",
        "",
        f"{len(logouts)} logouts: p50 {pct(logouts, 0.5):.0f} ms, "
        f"max {max(logouts) * 1000:.0f} ms.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300, help="requests per CPU row")
    parser.add_argument("--pings", type=int, default=300, help="the other caller's per row")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--logouts", type=int, default=20)
    parser.add_argument(
        "--before-python",
        help="an interpreter with an earlier fastmcp-temporal installed (e.g. a venv of "
        "`git archive 0f5f5ed`): its front end's rows run beside ours, in the same run",
    )
    parser.add_argument("--before-requests", type=int, default=20, help="per before CPU row")
    parser.add_argument("--before-pings", type=int, default=30, help="per before ping row")
    parser.add_argument("--out", type=Path, help="write the report here (default: stdout)")
    args = parse_args(parser, requests=5, pings=10, rounds=1, logouts=2, out=None)
    publish("session_ids.py", run(args), args.out)
