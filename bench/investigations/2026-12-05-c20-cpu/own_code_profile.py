"""What our own functions cost per plain call at concurrency 20, by a deterministic profile.

One embedded server (``bench/support/servers.echo_server``), 50 warm-up calls, then
8,000 plain ``tools/call``s of the default tool, 20 at a time, under ``cProfile``;
prints each of the package's functions by cumulative time per call, and the
temporalio and FastMCP calls inside the biggest ones (so they can be told apart
from ours). The profiler slows the process about 1.6x: read the numbers as shares.

    .venv/bin/python bench/investigations/2026-12-05-c20-cpu/own_code_profile.py
"""

from __future__ import annotations

import asyncio
import cProfile
import logging
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))

import httpx  # noqa: E402
from fastmcp.utilities.tests import run_server_async  # noqa: E402
from support.mcp_http import McpHttp  # noqa: E402
from support.servers import echo_server  # noqa: E402

from fastmcp_temporal import TemporalTasks  # noqa: E402

CALLS, CONCURRENCY = 8000, 20
OURS = ("/server/", "/activities/", "/workflows/")
INSIDE = ("tool_leg.py:_run", "tool_leg.py:_resolve", "starter.py:start", "task_watch.py:ended")


async def profile() -> pstats.Stats:
    served = echo_server(TemporalTasks(data_dir=tempfile.mkdtemp(), ui=False), "own-code")
    async with run_server_async(served) as url, httpx.AsyncClient(timeout=30) as http:
        logging.getLogger("uvicorn.access").disabled = True
        wire = McpHttp(url, http)

        async def call(index: int) -> None:
            arguments = {"name": "echo_plain", "arguments": {"text": f"x{index}"}}
            await wire.result("tools/call", arguments, declare_tasks=False)

        for index in range(50):
            await call(index)
        profiler = cProfile.Profile()
        began = time.process_time()
        profiler.enable()
        for batch in range(CALLS // CONCURRENCY):
            await asyncio.gather(*(call(batch * CONCURRENCY + i) for i in range(CONCURRENCY)))
        profiler.disable()
        spent = (time.process_time() - began) / CALLS * 1000
        print(f"CPU of this process per call, profiled: {spent:.2f} ms\n")
    return pstats.Stats(profiler)


def per_call(seconds: float) -> float:
    return seconds / CALLS * 1000


def name_of(key: tuple[str, int, str]) -> str:
    path, _, function = key
    return f"{path.split('site-packages/')[-1].split(str(ROOT) + '/')[-1]}:{function}"


def main() -> None:
    stats = asyncio.run(profile()).stats  # type: ignore[attr-defined]
    ours = sorted(
        ((values[3], key) for key, values in stats.items()
         if key[0].startswith(str(ROOT)) and "/.venv" not in key[0]
         and any(part in key[0] for part in OURS)),
        reverse=True,
    )  # fmt: skip
    print("| our function | cumulative ms per call | own (self) ms per call |")
    print("|---|---:|---:|")
    for cumulative, key in ours[:25]:
        print(f"| `{name_of(key)}` | {per_call(cumulative):.3f} | {per_call(stats[key][2]):.3f} |")
    print("\nInside the biggest (callee: cumulative ms per call):")
    for key in (key for _, key in ours if name_of(key).endswith(INSIDE)):
        print(f"- `{name_of(key)}` {per_call(stats[key][3]):.3f}:")
        for callee, values in stats.items():
            if key in values[4] and per_call(values[4][key][3]) > 0.01:
                print(f"  - `{name_of(callee)}` {per_call(values[4][key][3]):.3f}")


if __name__ == "__main__":
    main()
