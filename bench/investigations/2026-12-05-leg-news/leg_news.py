"""What the in-process leg news buys a front end with a worker of its own.

A durable plain call hears what its task's legs do from ``activities.leg_news`` when
they run in the front end's worker, and from the front end's read loop otherwise.
Here both ways on the embedded default, in one run: the same server with its legs'
news, and with none (``LegNews`` replaced by nothing, as if every leg ran elsewhere).
Per call: the Temporal requests the front end made (by RPC), the progress
notifications and log lines its client got, and, for a tool that asks, the time from
the call until its MRTR question arrived.

    .venv/bin/python bench/investigations/2026-12-05-leg-news/leg_news.py --n 20
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import mcp_types
import temporalio.service as service
from fastmcp import Context, FastMCP
from fastmcp.utilities.tests import run_server_async

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from support.mcp_http import McpHttp

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.server.extension import lifespan

rpcs: Counter[str] = Counter()
_rpc_call = service._BridgeServiceClient._rpc_call


async def _counted(self: Any, rpc: str, *args: Any, **kwargs: Any) -> Any:
    rpcs[rpc] += 1
    return await _rpc_call(self, rpc, *args, **kwargs)


def server() -> FastMCP:
    mcp = FastMCP("leg-news")
    mcp.add_extension(TemporalTasks(data_dir=tempfile.mkdtemp(), ui=False))

    @mcp.tool(task=True)
    async def chatty(ctx: Context) -> str:
        for step in range(1, 7):
            await ctx.info(f"line {step}")
            await ctx.report_progress(step, 6, f"step {step}")
            await asyncio.sleep(0.5)
        return "done"

    @mcp.tool(task=True)
    async def asks(ctx: Context) -> str:
        if ctx.input_responses:
            return "answered"
        return mcp_types.InputRequiredResult(  # type: ignore[return-value]
            input_requests={
                "ok": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message="OK?", requested_schema={"type": "object", "properties": {}}
                    )
                )
            }
        )

    return mcp


async def call(wire: McpHttp, tool: str, n: int) -> tuple[int, int, float]:
    """Progress notifications, log lines, seconds to the answer."""
    body, headers = wire._request(
        "tools/call",
        {"name": tool, "arguments": {}},
        declare_tasks=False,
        meta={
            "progressToken": f"p{n}",
            "io.modelcontextprotocol/logLevel": "debug",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        },
    )
    began, progress, lines = time.monotonic(), 0, 0
    async with wire.http.stream("POST", wire.url, json=body, headers=headers) as response:
        async for line in response.aiter_lines():
            if '"notifications/progress"' in line:
                progress += 1
            elif '"notifications/message"' in line:
                lines += 1
    return progress, lines, time.monotonic() - began


async def measure(news: bool, n: int) -> str:
    unheard = mock.patch.object(lifespan, "LegNews", lambda: None)
    with contextlib.nullcontext() if news else unheard:
        mcp = server()
        async with (
            run_server_async(mcp, transport="http") as url,
            httpx.AsyncClient(timeout=60) as http,
        ):
            wire = McpHttp(url, http)
            await call(wire, "chatty", -1)  # warm-up
            rows = []
            for tool in ("chatty", "asks"):
                rpcs.clear()
                results = [await call(wire, tool, i) for i in range(n)]
                per_call = {rpc: count / n for rpc, count in sorted(rpcs.items())}
                rows.append(
                    f"| {'with' if news else 'without'} | {tool} | "
                    f"{statistics.median(r[0] for r in results):.0f} | "
                    f"{statistics.median(r[1] for r in results):.0f} | "
                    f"{statistics.median(r[2] for r in results) * 1000:.0f} ms | "
                    + ", ".join(f"{rpc} {count:.2f}" for rpc, count in per_call.items())
                    + " |"
                )
    return "\n".join(rows)


async def main(n: int) -> None:
    service._BridgeServiceClient._rpc_call = _counted  # type: ignore[method-assign]
    print(
        "| leg news | tool | notifications/progress | notifications/message | "
        "call p50 | Temporal requests per call |"
    )
    print("|---|---|---|---|---|---|")
    for news in (True, False, True, False):
        print(await measure(news, n), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20)
    asyncio.run(main(parser.parse_args().n))
