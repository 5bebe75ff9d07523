"""Generation 4: local-leg paths recorded with ``local-leg-progress``, in ``tests/histories/v4/``.

The patch ``fastmcp-temporal/local-leg-progress`` (``workflows/task_workflow.py``) is
asked only before a *local* leg: its marker, then a leg that signals its progress
to the workflow (``mcp_leg_progress``, written to the memo), and a workflow that
receives every signal the leg says it sent before it ends the task -- or, after a
local leg that failed, waits one timer first. Activity-leg paths issue exactly
the commands of generation 3, so only the local-leg paths are recorded here.
"""

from __future__ import annotations

import asyncio

from fastmcp import Context

from fastmcp_temporal.server.tasks.starter import ToolOptions
from fastmcp_temporal.workflows.models import LegPolicy
from tests.histories.harness import Harness, Run, TaskPath, text, wid
from tests.histories.paths import local_leg

V4 = "v4"
LOCAL = {"tools": {"survey": ToolOptions(local_legs=True)}}


async def local_leg_progress(harness: Harness) -> dict[str, Run]:
    """A local leg reports twice, across one workflow task heartbeat, then returns.

    The first report is applied mid-leg (when the SDK reopens the leg's
    workflow task, ~1.6 s in); the second is sent just before the leg returns,
    so the workflow waits for it before it completes the task.
    """

    async def survey(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "surveyed half")
        await asyncio.sleep(2.5)
        await ctx.report_progress(2, 2, "surveyed all")
        await asyncio.sleep(0.2)
        return "surveyed"

    async with harness.serve(harness.tasks(**LOCAL), survey) as wire:  # type: ignore[arg-type]
        task = await wire.start("survey")
        assert text(await wire.wait_status(task, "completed")) == "surveyed"
    return {f"{V4}/local_leg_progress": Run(wid(task))}


async def local_leg_failed_after_progress(harness: Harness) -> dict[str, Run]:
    """A local leg reports, then outlives its timeout: one timer, then ``failed``."""

    async def survey(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "surveyed half")
        await asyncio.sleep(3)
        return "never"

    extension = harness.tasks(
        leg_policy=LegPolicy(local_timeout_s=1.0, max_attempts=1),
        **LOCAL,  # type: ignore[arg-type]
    )
    async with harness.serve(extension, survey) as wire:
        task = await wire.start("survey")
        failed = await wire.wait_status(task, "failed")
        assert "Tool leg failed" in failed["error"]["message"]
    return {f"{V4}/local_leg_failed_after_progress": Run(wid(task))}


async def _local_leg_v4(harness: Harness) -> dict[str, Run]:
    return {f"{V4}/local_leg": run for run in (await local_leg(harness)).values()}


FOURTH_GENERATION: tuple[TaskPath, ...] = (
    TaskPath(f"{V4}/local_leg", _local_leg_v4, (f"{V4}/local_leg",)),
    TaskPath(f"{V4}/local_leg_progress", local_leg_progress, (f"{V4}/local_leg_progress",)),
    TaskPath(
        f"{V4}/local_leg_failed_after_progress",
        local_leg_failed_after_progress,
        (f"{V4}/local_leg_failed_after_progress",),
    ),
)
