"""Deliberately changed task workflows, for the upgrade-discipline test only.

The change is the textbook breaking one: a new command -- a one-second timer --
in front of every tool leg. Each class is the task workflow of the ``add`` tool
(``McpTask:add``, the tool of the recorded ``plain_result`` history), so a
worker or replayer that registers one runs it instead of the dynamic
``McpToolTaskWorkflow``. The three stages are the life of a patch
(CONTRIBUTING.md): made unconditionally (the mistake), behind
``workflow.patched`` (the release that ships it), behind
``workflow.deprecate_patch`` (once no task from before the patch is in flight).
Kept in their own module because the workflow sandbox re-imports it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow

from fastmcp_temporal.workflows import LegOutcome, McpTaskWorkflow, TaskStart, TaskView

PATCH_ID = "pause-before-leg"
#: The workflow type every variant answers for.
WORKFLOW_TYPE = "McpTask:add"


class _PauseBeforeLeg(McpTaskWorkflow):
    """The changed command sequence; subclasses decide how it is guarded."""

    def _pause_now(self) -> bool:
        raise NotImplementedError

    async def _run_leg(self, *args: Any, **kwargs: Any) -> LegOutcome:
        if self._pause_now():
            await workflow.sleep(timedelta(seconds=1))
        return await super()._run_leg(*args, **kwargs)


@workflow.defn(name=WORKFLOW_TYPE)
class UnguardedPause(_PauseBeforeLeg):
    """The mistake: the new timer for every task, including those already in flight."""

    @workflow.init
    def __init__(self, start: TaskStart) -> None:
        super().__init__(start)

    @workflow.run
    async def run(self, start: TaskStart) -> TaskView:
        return await super().run(start)

    def _pause_now(self) -> bool:
        return True


@workflow.defn(name=WORKFLOW_TYPE)
class GuardedPause(_PauseBeforeLeg):
    """Release N: the timer only for tasks that reach the leg on new code."""

    @workflow.init
    def __init__(self, start: TaskStart) -> None:
        super().__init__(start)

    @workflow.run
    async def run(self, start: TaskStart) -> TaskView:
        return await super().run(start)

    def _pause_now(self) -> bool:
        return workflow.patched(PATCH_ID)


@workflow.defn(name=WORKFLOW_TYPE)
class DeprecatedPause(_PauseBeforeLeg):
    """Release N+1, once no pre-patch task is in flight: always pause, keep the marker."""

    @workflow.init
    def __init__(self, start: TaskStart) -> None:
        super().__init__(start)

    @workflow.run
    async def run(self, start: TaskStart) -> TaskView:
        return await super().run(start)

    def _pause_now(self) -> bool:
        workflow.deprecate_patch(PATCH_ID)
        return True
