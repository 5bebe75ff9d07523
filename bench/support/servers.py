"""The servers the throughput benchmarks measure: the no-op tools, and the peer's Redis."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from fastmcp import FastMCP
from fastmcp.utilities.tasks import TaskConfig

from fastmcp_temporal.server.embedded.devserver import free_port


def echo_server(extension: Any, name: str = "bench", adaptive: bool = False) -> FastMCP:
    """The no-op tools; ``adaptive``: FastMCP's default interval, so ``pollIntervalMs`` adapts."""
    mcp = FastMCP(name)
    mcp.add_extension(extension)
    fixed = {} if adaptive else {"poll_interval": timedelta(milliseconds=20)}

    @mcp.tool(task=TaskConfig(mode="required", **fixed))
    async def echo(text: str) -> str:
        return text

    # A short tool (a FastMCP ``timeout`` below 30 s): its legs are local by default.
    @mcp.tool(task=TaskConfig(mode="required", **fixed), timeout=10)
    async def echo_short(text: str) -> str:
        return text

    @mcp.tool
    async def echo_sync(text: str) -> str:
        return text

    # task=True (optional): a client without the tasks extension gets a durable sync call.
    @mcp.tool(task=TaskConfig(mode="optional", **fixed))
    async def echo_plain(text: str) -> str:
        return text

    @mcp.tool(task=TaskConfig(mode="optional", **fixed), timeout=10)
    async def echo_plain_short(text: str) -> str:
        return text

    return mcp


@asynccontextmanager
async def redis_server(appendonly: bool) -> AsyncIterator[tuple[str, int]]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    data = tempfile.mkdtemp(prefix="bench-redis-")
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            data,
            "--save",
            "",
            "--appendonly",
            "yes" if appendonly else "no",
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        await asyncio.sleep(0.5)
        yield f"redis://127.0.0.1:{port}/0", process.pid
    finally:
        process.terminate()
        process.wait()
