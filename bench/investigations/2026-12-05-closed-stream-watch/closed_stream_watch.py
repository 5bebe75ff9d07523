"""What the closed-stream watch costs a crowd of waiting 2025-11-25 plain calls.

A 2025-xx call whose SSE stream closed keeps its handler on the server, so each waiting
call on that wire asks Starlette once a tick whether its client went away
(``sync_calls._cancel_when_stream_closes``). This measures what that costs: one
FastMCP server with ``TemporalTasks`` (embedded Temporal, in-process worker), N
concurrent plain calls of a silent tool from one raw 2025-11-25 session (as a host's
SDK sends them) over streamable HTTP, and this process's CPU (server, worker and
client together) over a window while they all wait -- with the watch, and with it
replaced by a no-op, in interleaved rounds.

    .venv/bin/python bench/investigations/2026-12-05-closed-stream-watch/closed_stream_watch.py \\
        --calls 200 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import statistics
import tempfile
import time
from typing import Any

import httpx
from fastmcp import FastMCP
from fastmcp.utilities.tests import run_server_async

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.server.protocol import sync_calls

HANDSHAKE = "2025-11-25"
WATCH = sync_calls._cancel_when_stream_closes


async def no_watch(context: Any, scope: Any) -> None:
    return None


async def crowd(url: str, calls: int, window_s: float, body_s: float) -> float:
    """CPU seconds per wall second of this process while ``calls`` calls wait."""
    ids = itertools.count(1)
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=httpx.Timeout(120, read=None)) as http:
        hello = {
            "protocolVersion": HANDSHAKE,
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }
        body = {"jsonrpc": "2.0", "id": next(ids), "method": "initialize", "params": hello}
        init = await http.post(url, json=body, headers=headers)
        headers |= {"mcp-session-id": init.headers["mcp-session-id"]}
        headers |= {"mcp-protocol-version": HANDSHAKE}
        notified = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(url, json=notified, headers=headers)

        async def one(i: int) -> None:
            params = {"name": "silent", "arguments": {"seconds": body_s, "n": i}}
            request = {"jsonrpc": "2.0", "id": next(ids), "method": "tools/call", "params": params}
            async with http.stream("POST", url, json=request, headers=headers) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data:") and '"result"' in line:
                        json.loads(line[5:])
                        return

        waiting = [asyncio.create_task(one(i)) for i in range(calls)]
        await asyncio.sleep(body_s / 3)  # every call started and waits
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(window_s)
        used = (time.process_time() - cpu) / (time.perf_counter() - wall)
        await asyncio.gather(*waiting)
    return used


async def main(calls: int, rounds: int, window_s: float) -> None:
    mcp = FastMCP("closed-stream-watch")
    mcp.add_extension(TemporalTasks(data_dir=tempfile.mkdtemp(prefix="bench-watch-"), ui=False))

    @mcp.tool(task=True)
    async def silent(seconds: float, n: int) -> str:
        await asyncio.sleep(seconds)
        return f"{n}"

    results: dict[str, list[float]] = {"with the watch": [], "without (a no-op)": []}
    body_s = window_s * 2
    async with run_server_async(mcp) as url:
        logging.getLogger("uvicorn.access").disabled = True
        for _ in range(rounds):
            for label, watch in (("with the watch", WATCH), ("without (a no-op)", no_watch)):
                sync_calls._cancel_when_stream_closes = watch  # type: ignore[assignment]
                results[label].append(await crowd(url, calls, window_s, body_s))
    print(f"{calls} waiting 2025-11-25 plain calls, {rounds} rounds of a {window_s:g} s window\n")
    print("| variant | CPU of this process, s per s (mean of rounds) | rounds |")
    print("|---|---|---|")
    for label, values in results.items():
        shown = ", ".join(f"{value:.3f}" for value in values)
        print(f"| {label} | {statistics.mean(values):.3f} | {shown} |")
    with_watch = statistics.mean(results["with the watch"])
    without = statistics.mean(results["without (a no-op)"])
    print(
        f"\nratio with / without: {with_watch / without:.2f} x; per call and second: "
        f"{(with_watch - without) / calls * 1e6:.0f} µs of CPU"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--window", type=float, default=10.0)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds, args.window))
