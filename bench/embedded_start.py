"""How long a ``TemporalTasks()`` lifespan takes to be ready on the embedded server.

    .venv/bin/python bench/embedded_start.py --cold 3 --warm 20 > bench/results/embedded_start.md

*Cold*: a fresh data directory, nothing running: the lifespan starts the keeper,
which starts ``temporal server start-dev`` and waits for it and its Web UI.
*Before* (the previous default, for comparison): every lifespan started its own
dev server (``DevServer.start``, Web UI included) and stopped it on the way out.
*Warm*: another lifespan on the same data directory while the server runs
(held by a first lifespan, as a test session or a sibling server holds it):
it joins (two ``flock``s and a JSON file), connects and starts its worker.
Ready means the in-memory MCP client has entered (the server's lifespan ran).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from fastmcp import Client, FastMCP
from support.smoke import parse_args

from fastmcp_temporal import DevServer, TemporalTasks


def echo_server(data_dir: Path, address: str | None = None) -> FastMCP:
    mcp = FastMCP("bench-start")
    mcp.add_extension(TemporalTasks(data_dir=data_dir, address=address))

    @mcp.tool(task=True)
    async def echo(text: str) -> str:
        return text

    return mcp


async def ready_s(data_dir: Path) -> float:
    started = time.perf_counter()
    async with Client(echo_server(data_dir)):
        return time.perf_counter() - started


async def cold(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as directory:
            times.append(await ready_s(Path(directory)))
            await asyncio.sleep(4)  # past the linger: the server stops before the dir goes
    return times


async def before(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as directory:
            started = time.perf_counter()
            dev = await DevServer.start(data_dir=Path(directory))
            try:
                async with Client(echo_server(Path(directory), dev.address)):
                    times.append(time.perf_counter() - started)
            finally:
                dev.stop()
    return times


async def warm(runs: int) -> list[float]:
    with tempfile.TemporaryDirectory() as directory:
        async with Client(echo_server(Path(directory))):
            return [await ready_s(Path(directory)) for _ in range(runs)]


def row(name: str, times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    return f"| {name} | {len(ms)} | {statistics.median(ms):.0f} | {ms[0]:.0f} | {ms[-1]:.0f} |"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cold", type=int, default=3)
    parser.add_argument("--warm", type=int, default=20)
    args = parse_args(parser, cold=1, warm=2)
    before_times = await before(args.cold)
    cold_times = await cold(args.cold)
    warm_times = await warm(args.warm)
    print("| lifespan ready | runs | p50 ms | min ms | max ms |")
    print("|---|---|---|---|---|")
    print(row("before: a dev server per lifespan (the previous default)", before_times))
    print(row("cold: start keeper + Temporal + UI", cold_times))
    print(row("warm: join the running server (same data dir)", warm_times))


if __name__ == "__main__":
    asyncio.run(main())
