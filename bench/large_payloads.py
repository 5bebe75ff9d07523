"""Big results: fastmcp-temporal vs a synchronous ``tools/call`` vs fastmcp-tasks on Redis.

    .venv/bin/python bench/large_payloads.py > bench/results/large_payloads.md

A task tool returns 100 KB, 1 MB, 10 MB and 50 MB of text (one text block,
``bench/support/payload_server.py``). Each server is its own process on 127.0.0.1,
reached over streamable HTTP by a FastMCP client in this process:

- **fastmcp-temporal**, the embedded default (``TemporalTasks()``: dev server,
  in-process worker, payloads past 256 KiB in ``<data dir>/payloads``);
- the same server's synchronous ``produce_sync`` (no task): the floor;
- **fastmcp-tasks 4.1.4** on a real ``redis-server`` (``appendonly yes``).

Per size, the rows run round-robin (``--rounds``) so a slow spell of the
machine hits each alike. Columns: ``create`` (``tools/call`` until the
``CreateTaskResult``), ``end to end`` (create, poll every 50 ms, until the
final ``tasks/get`` returned the result), ``get finished`` (one more
``tasks/get`` of the finished task, result included), and the server process's
peak RSS while that size ran (sampled every 10 ms from ``/proc``; Python keeps
memory it freed, so a row's peak includes what the sizes before it left).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import fastmcp_tasks  # noqa: F401  (client half)
from fastmcp import Client
from fastmcp_tasks import call_tool_task
from support.payload_server import text_of
from support.servers import redis_server
from support.smoke import parse_args

from fastmcp_temporal.server.embedded.devserver import free_port

HERE = Path(__file__).resolve().parent
SIZES = {"100 KB": 100_000, "1 MB": 1_000_000, "10 MB": 10_000_000, "50 MB": 50_000_000}
REPEATS = {100_000: 10, 1_000_000: 6, 10_000_000: 3, 50_000_000: 2}


@dataclass
class Row:
    creates: list[float] = field(default_factory=list)
    e2e: list[float] = field(default_factory=list)
    gets: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    errors: list[str] = field(default_factory=list)

    def text(self, name: str, size: str) -> str:
        def ms(samples: list[float]) -> str:
            return f"{statistics.median(samples) * 1000:.0f}" if samples else "n/a"

        errors = f"{len(self.errors)} ({self.errors[0][:60]})" if self.errors else "0"
        return (
            f"| {size} | {name} | {ms(self.creates)} | {ms(self.e2e)} | {ms(self.gets)} | "
            f"{self.peak_rss_mb:.0f} | {errors} |"
        )


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@asynccontextmanager
async def sampling_rss(pid: int, row: Row) -> AsyncIterator[None]:
    async def sample() -> None:
        while True:
            row.peak_rss_mb = max(row.peak_rss_mb, rss_mb(pid))
            await asyncio.sleep(0.01)

    task = asyncio.create_task(sample())
    try:
        yield
    finally:
        task.cancel()


@asynccontextmanager
async def server(*args: str) -> AsyncIterator[tuple[str, int]]:
    """``payload_server.py`` in its own process; yields its MCP URL and PID."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HERE / "support" / "payload_server.py"),
        "--port",
        str(port),
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", process.pid
    finally:
        process.terminate()
        await process.wait()


Measure = Callable[[Client, int, Row], Awaitable[None]]


async def as_task(client: Client, size: int, row: Row) -> None:
    started = time.perf_counter()
    task = await call_tool_task(client, "produce", {"size": size})
    row.creates.append(time.perf_counter() - started)
    result = await task.result()
    row.e2e.append(time.perf_counter() - started)
    before = time.perf_counter()
    final = await task.status()
    row.gets.append(time.perf_counter() - before)
    texts = [result.content[0].text, (final.result or {})["content"][0]["text"]]  # type: ignore[union-attr]
    if any(text != text_of(size) for text in texts):
        raise AssertionError("the result differs from what the tool returned")


async def synchronously(client: Client, size: int, row: Row) -> None:
    started = time.perf_counter()
    result = await client.call_tool("produce_sync", {"size": size})
    row.e2e.append(time.perf_counter() - started)
    if result.content[0].text != text_of(size):  # type: ignore[union-attr]
        raise AssertionError("the result differs from what the tool returned")


async def main(rounds: int, sizes: list[str], repeats: int | None, redis: bool) -> None:
    async with AsyncExitStack() as stack:
        data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-payloads-"))
        temporal_url, temporal_pid = await stack.enter_async_context(
            server("--backend", "temporal", "--data-dir", data_dir)
        )
        temporal = await stack.enter_async_context(Client(temporal_url, timeout=600))
        systems: list[tuple[str, Client, int, Measure]] = [
            ("fastmcp-temporal (embedded default, disk store)", temporal, temporal_pid, as_task),
            ("FastMCP synchronous `tools/call` (no task)", temporal, temporal_pid, synchronously),
        ]
        if redis:
            redis_url, _ = await stack.enter_async_context(redis_server(appendonly=True))
            peer_url, peer_pid = await stack.enter_async_context(
                server("--backend", "redis", "--url", redis_url)
            )
            peer = await stack.enter_async_context(Client(peer_url, timeout=600))
            systems.append(("fastmcp-tasks, Redis (AOF on)", peer, peer_pid, as_task))
        for _, client, _, measure in systems:  # warm up: pollers, caches, sandboxes
            for _ in range(3):
                await measure(client, 1000, Row())
        print(
            "| result | system | create ms | end to end ms | get finished ms "
            "| server peak RSS MB | errors |"
        )
        print("|---|---|---|---|---|---|---|")
        for label in sizes:
            size = SIZES[label]
            rows = {name: Row() for name, *_ in systems}
            per_round = max(1, (repeats or REPEATS[size]) // rounds)
            for _ in range(rounds):
                for name, client, pid, measure in systems:
                    row = rows[name]
                    async with sampling_rss(pid, row):
                        for _ in range(per_round):
                            try:
                                await measure(client, size, row)
                            except Exception as err:
                                row.errors.append(f"{type(err).__name__}: {err}")
            for name, row in rows.items():
                print(row.text(name, label), flush=True)
        blobs = sum(p.stat().st_size for p in Path(data_dir, "payloads").rglob("*") if p.is_file())
        print(f"\nfastmcp-temporal payload store after the run: {blobs / 1e6:.0f} MB")
        print(f"\n(pid {os.getpid()}; {rounds} rounds)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES))
    parser.add_argument("--repeats", type=int, help="calls per size and system (default: by size)")
    parser.add_argument(
        "--no-redis", action="store_true", help="leave out the peer on Redis (needs redis-server)"
    )
    args = parse_args(parser, rounds=1, sizes=["100 KB", "1 MB"], repeats=1, no_redis=True)
    asyncio.run(main(args.rounds, args.sizes, args.repeats, not args.no_redis))
