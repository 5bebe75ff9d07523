"""The workflow tool ``bench/remote_calls.py`` times (its own module: the sandbox re-imports it)."""

from __future__ import annotations

import asyncio

from temporalio import workflow

from fastmcp_temporal.workflows import remote


@workflow.defn
class TimedRemoteCalls:
    """Call ``quick`` ``count`` times at once; how long the calls took (ms), as the workflow saw."""

    @workflow.run
    async def run(self, count: int) -> float:
        started = workflow.now()
        quick = remote("r", progress_every=None)
        await asyncio.gather(*(quick.call_tool("quick", {"n": i}) for i in range(count)))
        return (workflow.now() - started).total_seconds() * 1000
