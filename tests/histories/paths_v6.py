"""Generation 6: a leg that reports progress just before it returns.

Since this generation a leg's ``LegOutcome`` carries the body's last progress
report (``final_progress``) and the task's final view keeps it
(``TaskView.final_progress``), so a waiting synchronous call can send it: the
heartbeat that carried it ended with the leg, and a local leg drops a signal it
has not sent when it returns. No command changed; the payloads did. Recorded on
an activity leg (``final_progress``) and on a local leg
(``final_progress_local_leg``, ``ToolOptions(local_legs=True)``).
"""

from __future__ import annotations

from fastmcp import Context

from fastmcp_temporal.server.tasks.starter import ToolOptions
from tests.histories.harness import Harness, Run, TaskPath, wid

V6 = "v6"


async def _report_then_return(harness: Harness, name: str, *, local: bool) -> dict[str, Run]:
    async def finish(ctx: Context) -> str:
        await ctx.report_progress(1, 1, "done")
        return "finished"

    tools = {"finish": ToolOptions(local_legs=True)} if local else None
    async with harness.serve(harness.tasks(tools=tools), finish) as wire:
        task = await wire.start("finish")
        done = await wire.wait_status(task, "completed")
    assert done["result"]["structuredContent"] == {"result": "finished"}
    return {f"{V6}/{name}": Run(wid(task))}


async def final_progress(harness: Harness) -> dict[str, Run]:
    return await _report_then_return(harness, "final_progress", local=False)


async def final_progress_local_leg(harness: Harness) -> dict[str, Run]:
    return await _report_then_return(harness, "final_progress_local_leg", local=True)


SIXTH_GENERATION: tuple[TaskPath, ...] = (
    TaskPath(f"{V6}/final_progress", final_progress, (f"{V6}/final_progress",)),
    TaskPath(
        f"{V6}/final_progress_local_leg",
        final_progress_local_leg,
        (f"{V6}/final_progress_local_leg",),
    ),
)
