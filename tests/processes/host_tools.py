"""The task tools real MCP hosts call in ``tests/test_hosts.py``.

A front end (``tests.processes.host_server``) mounts them; they run on its own worker
or on a worker process (``python -m tests.processes.worker ADDRESS QUEUE
tests.processes.host_tools``). Each run of a body leaves ``run-<pid>-<n>`` in the
``runs`` directory its caller names when it starts and ``done-<pid>-<n>`` when it
ends, so a test counts how often the body ran and which process finished it; each
result names that process too, so a test knows which run's result reached the host.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastmcp import Context, FastMCP

mcp = FastMCP("host-tools")


@contextmanager
def recorded(runs: str) -> Iterator[None]:
    """Mark a run's start, and its end if it gets there (not if it is killed or cancelled)."""
    run = f"{os.getpid()}-{uuid.uuid4().hex}"
    (Path(runs) / f"run-{run}").write_text("")
    yield
    (Path(runs) / f"done-{run}").write_text("")


@mcp.tool(task=True)
async def count_steps(steps: int, runs: str, ctx: Context) -> str:
    """Count ``steps`` one-second steps, reporting each one as progress."""
    with recorded(runs):
        for step in range(1, steps + 1):
            await asyncio.sleep(1)
            await ctx.report_progress(step, steps, f"step {step}/{steps}")
    return f"counted {steps} steps in process {os.getpid()}"


@mcp.tool(task=True)
async def stay_silent(seconds: float, runs: str) -> str:
    """Work for ``seconds`` without reporting anything."""
    with recorded(runs):
        await asyncio.sleep(seconds)
    return f"silent for {seconds:g} s in process {os.getpid()}"
