"""Soak: a front end and a worker (two processes) under a steady mixed load.

    .venv/bin/python bench/soak.py --minutes 10 --out bench/results/soak.md

Starts ``bench/support/soak_server.py`` as a stateless front end (``fastmcp run``, HTTP)
and as a worker (``fastmcp-temporal worker``) on the embedded Temporal the
front end starts, both with their Prometheus endpoint on. ``--clients`` spec
clients (raw JSON-RPC over HTTP, each honouring ``pollIntervalMs``) create
tasks one after the other in turn: *quick* (returns at once), *slow* (four
progress steps, 2 s) and *asking* (parks in ``input_required``; the client
answers with ``tasks/update``). After ``--minutes`` they stop creating and
finish what they have. Reported:

- nothing lost: every created task ended ``completed`` with the right result;
- RSS and open file descriptors of both processes (and of Temporal), sampled;
- ``tasks/get`` p99 in the last window vs the first (a window is one minute,
  or a third of the run when it is shorter than three minutes);
- what the two metrics endpoints counted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from support.mcp_http import McpHttp
from support.processes import group, wait_for_port
from support.smoke import parse_args

from fastmcp_temporal.server.embedded.devserver import free_port
from fastmcp_temporal.server.embedded.shared import EmbeddedServer

ROOT = Path(__file__).resolve().parent.parent

KINDS = ("quick", "slow", "asking")
SAMPLE_EVERY_S = 10.0
#: Labels kept when the report sums a counter (tool names and queues are summed over).
_REPORTED_LABELS = ("outcome", "status", "method", "code")
DRAIN_S = 120.0


@dataclass
class Tally:
    created: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    completed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    wrong: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)
    gets: list[tuple[float, float]] = field(default_factory=list)  # (since start s, latency s)


class SoakClient(McpHttp):
    """A spec client that declares elicitation, so the asking tool may ask it."""

    def _request(
        self,
        method: str,
        params: dict[str, Any],
        declare_tasks: bool = True,
        meta: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], dict[str, str]]:
        body, headers = super()._request(method, params, declare_tasks, meta)
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = {}
        return body, headers


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@contextlib.contextmanager
def processes(data_dir: Path, port: int, metrics_ports: tuple[int, int]) -> Iterator[list[int]]:
    """Front end, then worker; both stopped (by process group) on the way out."""
    env = {**os.environ, "FASTMCP_TEMPORAL_DATA_DIR": str(data_dir)}
    bin_dir = Path(sys.executable).parent
    with group(env, data_dir) as started:
        front = started.start(
            "front-end",
            [
                str(bin_dir / "fastmcp"),
                "run",
                "bench/support/soak_server.py",
                "--transport",
                "http",
                *("--host", "127.0.0.1", "--port", str(port)),
            ],
            env={
                "FASTMCP_TEMPORAL_RUN_WORKER": "false",
                "FASTMCP_TEMPORAL_METRICS_PORT": str(metrics_ports[0]),
            },
        )
        wait_for_port(port)
        worker = started.start(
            "worker",
            [str(bin_dir / "fastmcp-temporal"), "worker", "bench/support/soak_server.py"],
            env={"FASTMCP_TEMPORAL_METRICS_PORT": str(metrics_ports[1])},
        )
        wait_for_port(metrics_ports[1])
        yield [front, worker]


async def one_task(mcp: McpHttp, kind: str, n: int, tally: Tally, began: float) -> None:
    arguments: dict[str, Any] = {
        "quick": {"n": n},
        "slow": {"steps": 4},
        "asking": {"item": f"i{n}"},
    }[kind]
    expected = {"quick": n * 2, "slow": "slow 4", "asking": f"i{n}: True"}[kind]
    created = await mcp.result("tools/call", {"name": kind, "arguments": arguments})
    task_id = created["taskId"]
    tally.created[kind] += 1
    deadline = time.monotonic() + DRAIN_S
    while time.monotonic() < deadline:
        await asyncio.sleep(max(created.get("pollIntervalMs", 500), 100) / 1000)
        sent = time.monotonic()
        created = await mcp.result("tasks/get", {"taskId": task_id})
        tally.gets.append((sent - began, time.monotonic() - sent))
        status = created["status"]
        if status == "input_required":
            (key,) = created["inputRequests"]
            answer = {"action": "accept", "content": {"ok": True}}
            await mcp.result("tasks/update", {"taskId": task_id, "inputResponses": {key: answer}})
        elif status == "completed":
            value = created["result"]["structuredContent"]["result"]
            if value == expected:
                tally.completed[kind] += 1
            else:
                tally.wrong.append(f"{kind} {task_id}: {value!r} != {expected!r}")
            return
        elif status in ("failed", "cancelled"):
            tally.wrong.append(f"{kind} {task_id}: {status} {created.get('statusMessage')}")
            return
    tally.unfinished.append(f"{kind} {task_id}")


async def client_loop(
    url: str, index: int, until: float, tally: Tally, began: float, counter: Iterator[int]
) -> None:
    async with httpx.AsyncClient(timeout=60) as http:
        mcp = SoakClient(url, http)
        for turn in itertools.count(index):
            if time.monotonic() >= until:
                return
            await one_task(mcp, KINDS[turn % len(KINDS)], next(counter), tally, began)


async def sample(pids: dict[str, int], every_s: float, samples: list[dict[str, Any]]) -> None:
    began = time.monotonic()
    while True:
        row: dict[str, Any] = {"t": time.monotonic() - began}
        for name, pid in pids.items():
            with contextlib.suppress(OSError):
                row[name] = (rss_mb(pid), open_fds(pid))
        samples.append(row)
        await asyncio.sleep(every_s)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else float("nan")


async def scrape_totals(port: int) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    async with httpx.AsyncClient(timeout=10) as http:
        text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample_ in family.samples:
            if sample_.name.startswith("mcp_") and sample_.name.endswith("_total"):
                labels = sorted(
                    f"{k}={v}" for k, v in sample_.labels.items() if k in _REPORTED_LABELS
                )
                key = f"{sample_.name}{{{','.join(labels)}}}"
                totals[key] = totals.get(key, 0) + sample_.value
    return totals


async def run(args: argparse.Namespace) -> str:
    data_dir = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    port, metrics_ports = free_port(), (free_port(), free_port())
    with processes(data_dir, port, metrics_ports) as (front_pid, worker_pid):
        server = EmbeddedServer.read(data_dir)
        pids = {"front end": front_pid, "worker": worker_pid}
        if server is not None:
            pids["temporal"] = server.temporal_pid
        url = f"http://127.0.0.1:{port}/mcp"
        tally, samples = Tally(), []
        began = time.monotonic()
        sampler = asyncio.create_task(sample(pids, SAMPLE_EVERY_S, samples))
        counter = itertools.count()
        until = began + args.minutes * 60
        await asyncio.gather(
            *(client_loop(url, i, until, tally, began, counter) for i in range(args.clients))
        )
        ran_s = time.monotonic() - began
        sampler.cancel()
        front_totals = await scrape_totals(metrics_ports[0])
        worker_totals = await scrape_totals(metrics_ports[1])
    return report(args, tally, samples, ran_s, front_totals, worker_totals)


def report(
    args: argparse.Namespace,
    tally: Tally,
    samples: list[dict[str, Any]],
    ran_s: float,
    front_totals: dict[str, float],
    worker_totals: dict[str, float],
) -> str:
    load_s = args.minutes * 60
    window = min(60.0, load_s / 3)
    first = [lat for t, lat in tally.gets if t < window]
    last = [lat for t, lat in tally.gets if load_s - window <= t < load_s]
    created, completed = sum(tally.created.values()), sum(tally.completed.values())

    def median_ms(values: list[float]) -> float:
        return 1000 * sorted(values)[len(values) // 2] if values else float("nan")

    lines = [
        "# Soak: front end + worker under a steady mixed load",
        "",
        "```bash",
        f".venv/bin/python bench/soak.py --minutes {args.minutes:g} --clients {args.clients} "
        f"--out {args.out}",
        "```",
        "",
        f"{args.clients} spec clients over streamable HTTP, each creating quick, slow (4 progress "
        "steps, 2 s) and asking (answered with `tasks/update`) tasks in turn, one at a time, "
        f"polling at `pollIntervalMs`; load for {load_s:.0f} s, then the tasks in flight "
        f"finish ({ran_s:.0f} s in all). Front end (`fastmcp run`, no worker) and worker "
        "(`fastmcp-temporal worker`) are separate processes on the embedded Temporal.",
        "",
        "## Nothing lost",
        "",
        "| kind | created | completed with the right result |",
        "|---|---|---|",
        *(f"| {k} | {tally.created[k]} | {tally.completed[k]} |" for k in KINDS),
        f"| **all** | **{created}** | **{completed}** |",
        "",
        f"Wrong or failed: {len(tally.wrong)}; never finished: {len(tally.unfinished)}."
        + "".join(f"\n- {w}" for w in (tally.wrong + tally.unfinished)[:10]),
        "",
        "## `tasks/get` latency",
        "",
        "| window | requests | p50 (ms) | p99 (ms) |",
        "|---|---|---|---|",
        f"| first {window:.0f} s | {len(first)} | {median_ms(first):.1f} | "
        f"{1000 * p99(first):.1f} |",
        f"| last {window:.0f} s of the load | {len(last)} | {median_ms(last):.1f} | "
        f"{1000 * p99(last):.1f} |",
        "",
        f"p99 last / first: **{p99(last) / p99(first):.2f}x** (target <= 1.5x).",
        "",
        "## RSS (MB) and open file descriptors, sampled",
        "",
        "| t (s) | " + " | ".join(f"{n} RSS | {n} fds" for n in samples[0] if n != "t") + " |",
        "|---|" + "---|---|" * (len(samples[0]) - 1),
    ]
    for row in samples:
        cells = [
            f"{row[n][0]:.0f} | {row[n][1]}" if n in row else "- | -"
            for n in samples[0]
            if n != "t"
        ]
        lines.append(f"| {row['t']:.0f} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## What the metrics endpoints counted",
        "",
        "| metric | front end | worker |",
        "|---|---|---|",
    ]
    for key in sorted(set(front_totals) | set(worker_totals)):
        lines.append(f"| `{key}` | {front_totals.get(key, 0):g} | {worker_totals.get(key, 0):g} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--out", default="bench/results/soak.md")
    arguments = parse_args(parser, minutes=0.1, clients=2, out=None)
    text = asyncio.run(run(arguments))
    if arguments.out is not None:
        Path(arguments.out).write_text(text)
    print(text)
