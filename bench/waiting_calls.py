"""A crowd of waiting plain calls: what it costs, and what each call hears.

    .venv/bin/python bench/waiting_calls.py --crowds 50 200 500 1000 \\
        --out bench/results/waiting_calls.md

A stateless front end (``bench/support/counting_front_end.py``: ``run_worker=False``,
counting its Temporal requests) and one worker (``fastmcp-temporal worker
--max-concurrent-legs``) on the embedded Temporal the front end starts, as separate
processes. For each crowd size N, three variants one after the other:

- **with a token**: N concurrent plain ``tools/call``s (raw 2026-07-28 JSON-RPC, no
  tasks extension, as hosts send) of ``work`` -- ``--body-s`` seconds, one progress
  report every ``--body-s``/``--reports`` -- each with a ``progressToken``, every
  notification on its response stream timed;
- **without**: the same calls without a token;
- **control**: N task-augmented calls of the same tool, which answer at once; nobody
  waits, the tasks just run (their run time from Temporal's visibility).

Reported per variant: calls answered right (and workflows completed), latency p50 /
p99 (the control: each task's run, start to close), progress notifications per call
(min / median) and the longest silence a call had (from its start, between two
notifications, to its result), CPU seconds of Temporal, the front end and the worker,
the front end's Temporal requests per second (by RPC), and the front end's peak RSS
and open descriptors. Then quick calls (a tool that returns at once, ``--quick`` of
them one after the other) on the idle server and beside a crowd of ``--beside``
waiting calls. The targets of issue 44: nothing lost; with a token, Temporal CPU at
most 1.3x the run without and p99 at most 1.15x; a notification at least every
``keepalive_s`` (15 s); quick calls' p99 beside the crowd at most 2x idle.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from support.mcp_http import McpHttp
from support.measure import cpu_seconds, ratio
from support.processes import group, wait_for_port
from support.report import publish
from support.smoke import parse_args
from temporalio.client import Client as TemporalClient

from fastmcp_temporal.server.embedded.devserver import free_port
from fastmcp_temporal.server.embedded.shared import EmbeddedServer

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = Path(__file__).resolve().parent / "support"
WORK_TYPE = "McpTask:work"


@dataclass
class Call:
    """One plain call as its client saw it."""

    began: float
    ended: float = 0.0
    right: bool = False
    notifications: list[float] = field(default_factory=list)
    #: How long after it was sent the front end took the call, from a keepalive's own
    #: "(N s since the call began)" (``None``: no keepalive came).
    taken_late: float | None = None

    @property
    def latency(self) -> float:
        return self.ended - self.began

    @property
    def longest_silence(self) -> float:
        marks = [self.began, *self.notifications, self.ended]
        return max(b - a for a, b in itertools.pairwise(marks))

    @property
    def longest_silence_after_the_first(self) -> float:
        """As ``longest_silence``, from the first notification on (``nan`` without one)."""
        marks = [*self.notifications, self.ended]
        gaps = [b - a for a, b in itertools.pairwise(marks)]
        return max(gaps) if self.notifications else float("nan")


@dataclass
class Variant:
    name: str
    crowd: int
    latencies: list[float]
    right: int
    completed: int
    notifications: list[int]
    silences: list[float]
    silences_after_first: list[float]
    taken_late: list[float]
    cpu: dict[str, float]
    seconds: float
    rpcs: dict[str, int]
    rss_mb: float
    fds: int


def rss_and_fds(pid: int) -> tuple[float, int]:
    rss = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


@contextlib.contextmanager
def processes(
    data_dir: Path, port: int, counts: Path, slots: int, python: str = sys.executable
) -> Iterator[dict[str, int]]:
    """The front end (which starts the embedded Temporal), then the worker; both stopped.

    ``python``: the interpreter (and so the fastmcp-temporal) they run, e.g. a checkout
    of an earlier commit's venv, for a "before" run of the same ladder."""
    env = {**os.environ, "FASTMCP_TEMPORAL_DATA_DIR": str(data_dir)}
    bin_dir = Path(python).parent
    with group(env, data_dir, grace_s=60) as started:
        front = started.start(
            "front-end", [python, str(SUPPORT / "counting_front_end.py"), str(port), str(counts)]
        )
        wait_for_port(port)
        worker = [str(bin_dir / "fastmcp-temporal"), "worker", "bench/support/waiting_server.py"]
        worker_pid = started.start("worker", [*worker, "--max-concurrent-legs", str(slots)])
        server = EmbeddedServer.read(data_dir)
        assert server is not None
        yield {"front end": front, "worker": worker_pid, "temporal": server.temporal_pid}


SINCE = re.compile(r"\((?:(\d+) min )?(\d+) s since the call began\)$")


def taken_late(message: dict[str, Any], call: Call) -> float | None:
    """The front end's delay in taking ``call``, read off a keepalive notification."""
    matched = SINCE.search(str(message.get("params", {}).get("message") or ""))
    if matched is None:
        return None
    server_s = int(matched.group(1) or 0) * 60 + int(matched.group(2))
    return max(time.monotonic() - call.began - server_s - 1, 0.0)  # whole seconds: one off


async def plain_call(wire: McpHttp, tool: str, arguments: dict[str, Any], token: bool) -> Call:
    """A plain ``tools/call``, its response stream read as it comes (SSE or JSON)."""
    n = arguments["n"]
    meta = {"progressToken": f"p{n}"} if token else None
    body, headers = wire._request(
        "tools/call", {"name": tool, "arguments": arguments}, declare_tasks=False, meta=meta
    )
    call = Call(began=time.monotonic())
    final: dict[str, Any] = {}
    async with wire.http.stream("POST", wire.url, json=body, headers=headers) as response:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("method") == "notifications/progress":
                    call.notifications.append(time.monotonic())
                    call.taken_late = call.taken_late or taken_late(message, call)
                elif "id" in message:
                    final = message
        else:
            final = json.loads(await response.aread())
    call.ended = time.monotonic()
    expected = f"worked {n}" if tool == "work" else None
    result = final.get("result") or {}
    text = (result.get("content") or [{}])[0].get("text")
    call.right = "result" in final and (expected is None or text == expected)
    return call


async def task_call(wire: McpHttp, n: int, body_s: float, reports: int) -> None:
    arguments = {"n": n, "seconds": body_s, "reports": reports}
    created = await wire.result("tools/call", {"name": "work", "arguments": arguments})
    assert created["resultType"] == "task", created


async def closed_runs(temporal: TemporalClient, since: datetime, crowd: int) -> list[float]:
    """Once ``crowd`` ``work`` tasks started since ``since`` have all closed: their run times."""
    query = f"WorkflowType = '{WORK_TYPE}' AND StartTime >= '{since.isoformat()}'"
    while True:
        running = await temporal.count_workflows(query + " AND ExecutionStatus = 'Running'")
        total = await temporal.count_workflows(query)
        if total.count >= crowd and running.count == 0:
            break
        await asyncio.sleep(1)
    runs = []
    async for execution in temporal.list_workflows(query + " AND ExecutionStatus = 'Completed'"):
        assert execution.close_time is not None
        runs.append((execution.close_time - execution.start_time).total_seconds())
    return runs


async def completed_since(temporal: TemporalClient, since: datetime, crowd: int) -> int:
    """How many ``work`` tasks started since ``since`` completed, once visibility shows them all
    (or 30 s passed: visibility trails the history under load)."""
    query = f"WorkflowType = '{WORK_TYPE}' AND StartTime >= '{since.isoformat()}'"
    deadline = time.monotonic() + 30
    while True:
        done = (await temporal.count_workflows(query + " AND ExecutionStatus = 'Completed'")).count
        if done >= crowd or time.monotonic() > deadline:
            return done
        await asyncio.sleep(0.5)


async def sample_peak(pid: int, peak: list[float]) -> None:
    while True:
        rss, fds = rss_and_fds(pid)
        peak[0], peak[1] = max(peak[0], rss), max(peak[1], fds)
        await asyncio.sleep(1)


async def variant(
    name: str,
    crowd: int,
    args: argparse.Namespace,
    wire: McpHttp,
    temporal: TemporalClient,
    pids: dict[str, int],
    counts: Path,
) -> Variant:
    since = datetime.now(UTC)
    cpu_before = {what: cpu_seconds(pid) for what, pid in pids.items()}
    rpcs_before = json.loads(counts.read_text())
    peak = [0.0, 0.0]
    sampler = asyncio.create_task(sample_peak(pids["front end"], peak))
    began = time.monotonic()
    base = int(time.time() * 1000) % 10**9
    calls: list[Call] = []
    if name == "control":
        await asyncio.gather(
            *(task_call(wire, base + i, args.body_s, args.reports) for i in range(crowd))
        )
        latencies = await closed_runs(temporal, since, crowd)
        right = len(latencies)
    else:
        arguments = [
            {"n": base + i, "seconds": args.body_s, "reports": args.reports} for i in range(crowd)
        ]
        token = name == "with a token"
        calls = await asyncio.gather(*(plain_call(wire, "work", a, token) for a in arguments))
        latencies = [call.latency for call in calls]
        right = sum(call.right for call in calls)
    seconds = time.monotonic() - began
    sampler.cancel()
    cpu = {what: cpu_seconds(pid) - cpu_before[what] for what, pid in pids.items()}
    rpcs_after = json.loads(counts.read_text())
    rpcs = {rpc: rpcs_after[rpc] - rpcs_before.get(rpc, 0) for rpc in rpcs_after}
    completed = await completed_since(temporal, since, crowd)
    return Variant(
        name,
        crowd,
        latencies,
        right,
        completed,
        [len(call.notifications) for call in calls],
        [call.longest_silence for call in calls],
        [call.longest_silence_after_the_first for call in calls],
        [call.taken_late for call in calls if call.taken_late is not None],
        cpu,
        seconds,
        {rpc: n for rpc, n in rpcs.items() if n},
        peak[0],
        int(peak[1]),
    )


async def quick_calls(wire: McpHttp, count: int) -> list[float]:
    latencies = []
    for i in range(count):
        call = await plain_call(wire, "quick", {"n": i}, token=True)
        assert call.right
        latencies.append(call.latency)
    return latencies


async def quick_beside_crowd(
    wire: McpHttp, temporal: TemporalClient, args: argparse.Namespace
) -> dict[str, list[float]]:
    """Quick calls on the idle server, beside ``--beside`` waiting calls, and beside as many
    tasks nobody waits for (the same load on Temporal and the worker, no waiting call)."""
    quick = {"idle": await quick_calls(wire, args.quick)}
    base = int(time.time() * 1000) % 10**9
    arguments = [
        {"n": base + i, "seconds": args.body_s, "reports": args.reports} for i in range(args.beside)
    ]
    crowd = asyncio.gather(*(plain_call(wire, "work", a, token=True) for a in arguments))
    await asyncio.sleep(min(5.0, args.body_s / 2))  # every call of the crowd waits
    quick["beside waiting calls"] = await quick_calls(wire, args.quick)
    await crowd
    since = datetime.now(UTC)
    await asyncio.gather(
        *(
            task_call(wire, base + args.beside + i, args.body_s, args.reports)
            for i in range(args.beside)
        )
    )
    await asyncio.sleep(min(5.0, args.body_s / 2))
    quick["beside tasks nobody waits for"] = await quick_calls(wire, args.quick)
    await closed_runs(temporal, since, args.beside)
    return quick


def q(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else float("nan")


def report(
    args: argparse.Namespace, variants: list[Variant], quick: tuple[list[float], list[float]]
) -> str:
    lines = [
        "| crowd | variant | right / workflows completed | p50 / p99 s | notifications per call "
        "(min / median) | longest silence (max) s, from the first notification on; the front "
        "end took the call s late (max) | "
        "Temporal CPU s | front end CPU s | "
        "worker CPU s | front end Temporal requests/s | front end peak RSS MB / fds |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for v in variants:
        notes = (
            f"{min(v.notifications)} / {statistics.median(v.notifications):.0f}"
            if v.notifications
            else "-"
        )
        silence = (
            f"{max(v.silences):.1f}, {max(v.silences_after_first):.1f}"
            if v.notifications and min(v.notifications)
            else (f"{max(v.silences):.1f}" if v.silences else "-")
        )
        if v.taken_late:
            silence += f"; {max(v.taken_late):.1f}"
        per_s = sum(v.rpcs.values()) / v.seconds
        top = ", ".join(
            f"{rpc} {n / v.seconds:.1f}"
            for rpc, n in sorted(v.rpcs.items(), key=lambda r: -r[1])[:3]
        )
        lines.append(
            f"| {v.crowd} | {v.name} | {v.right} / {v.completed} | {q(v.latencies, 0.5):.1f} / "
            f"{q(v.latencies, 0.99):.1f} | {notes} | {silence} | {v.cpu['temporal']:.1f} | "
            f"{v.cpu['front end']:.1f} | {v.cpu['worker']:.1f} | {per_s:.1f} ({top}) | "
            f"{v.rss_mb:.0f} / {v.fds} |"
        )
    lines += [
        "",
        "| crowd | with a token / without: Temporal CPU (target <= 1.3x) | p99 (target <= 1.15x) "
        "| p99 with a token / the control's |",
        "|---|---|---|---|",
    ]
    for crowd in args.crowds:
        at = {v.name: v for v in variants if v.crowd == crowd}
        token, plain, control = at["with a token"], at["without"], at["control"]
        lines.append(
            f"| {crowd} | {ratio(token.cpu['temporal'], plain.cpu['temporal'])} x | "
            f"{q(token.latencies, 0.99) / q(plain.latencies, 0.99):.2f} x | "
            f"{q(token.latencies, 0.99) / q(control.latencies, 0.99):.2f} x |"
        )
    idle = quick["idle"]
    lines += [
        "",
        f"Quick plain calls ({args.quick}, one after the other, with a token), and beside a crowd "
        f"of {args.beside} (p99 against idle: target <= 2x beside waiting calls):",
        "",
        "| where | p50 ms | p99 ms | p99 / idle |",
        "|---|---|---|---|",
    ]
    for where, latencies in quick.items():
        lines.append(
            f"| {where} | {q(latencies, 0.5) * 1000:.0f} | {q(latencies, 0.99) * 1000:.0f} | "
            f"{q(latencies, 0.99) / q(idle, 0.99):.2f} x |"
        )
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> str:
    data_dir = Path(tempfile.mkdtemp(prefix="bench-waiting-"))
    port, counts = free_port(), data_dir / "rpcs.json"
    slots = max([*args.crowds, args.beside]) + 10
    with processes(data_dir, port, counts, slots, args.python) as pids:
        server = EmbeddedServer.read(data_dir)
        assert server is not None
        temporal = await TemporalClient.connect(server.address)
        # Idle connections are dropped before uvicorn's 5 s keep-alive closes them under a call.
        limits = httpx.Limits(
            max_connections=slots + 50, max_keepalive_connections=slots + 50, keepalive_expiry=1.0
        )
        async with httpx.AsyncClient(timeout=httpx.Timeout(600), limits=limits) as http:
            wire = McpHttp(f"http://127.0.0.1:{port}/mcp", http)
            await quick_calls(wire, 5)  # warm-up: pollers, caches
            variants = []
            for crowd in args.crowds:
                for name in ("with a token", "without", "control"):
                    variants.append(await variant(name, crowd, args, wire, temporal, pids, counts))
                    print(f"[waiting_calls] {crowd} {name}: done", file=sys.stderr, flush=True)
            quick = await quick_beside_crowd(wire, temporal, args)
    return report(args, variants, quick)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crowds", type=int, nargs="+", default=[50, 200, 500, 1000])
    parser.add_argument("--body-s", type=float, default=20.0, help="each waiting call's body")
    parser.add_argument("--reports", type=int, default=20, help="progress reports per body")
    parser.add_argument("--quick", type=int, default=100, help="quick calls idle and beside")
    parser.add_argument("--beside", type=int, default=200, help="the crowd beside quick calls")
    parser.add_argument("--out", type=Path, help="write the report here (default: stdout)")
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the front end's and worker's interpreter (another checkout's venv: a before run)",
    )
    args = parse_args(parser, crowds=[3], body_s=2.0, reports=2, quick=3, beside=3, out=None)
    publish("waiting_calls.py", run(args), args.out)
