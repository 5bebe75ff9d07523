"""A workflow tool with a big result (kept free of server set-up: the sandbox re-imports it)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn
async def write_report(size: int) -> str:
    """``size`` characters: the activity's result is itself past the 2 MB limit."""
    return ("report " * (size // 7 + 1))[:size]


@workflow.defn
class BigReport:
    """Write a report of ``size`` characters in an activity and return it."""

    @workflow.run
    async def run(self, size: int) -> str:
        return await workflow.execute_activity(
            write_report, size, start_to_close_timeout=timedelta(seconds=60)
        )
