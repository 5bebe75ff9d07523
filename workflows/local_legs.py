"""The task side of a local leg: its progress signals, and ending only after them.

A local leg runs inside a workflow task and has no heartbeat, so since
``patches.LOCAL_LEG_PROGRESS`` it signals its progress to its own workflow
(``mcp_leg_progress``; ``activities.progress.ProgressSignals``), which puts the
message in its memo as the task's ``statusMessage``. The workflow receives
such a signal when the SDK next completes the leg's workflow task to keep it
open (at 80 % of the workflow task timeout), and the SDK commits the memo
write at the completion after that (or at the leg's end): ~3.2 s behind with
the 2 s timeout local-leg tasks start with.

The hazard this guards against: a signal that reaches Temporal while the
workflow task that *ends* the task is running makes Temporal reject that
task's commands (``UNHANDLED_COMMAND``), the local leg's result marker with
them, so the leg -- the tool body -- runs again, and a body that reports
progress just before returning would do so forever (measured: 7 runs in 15 s,
no result). So the leg returns how many signals Temporal acknowledged, and the
workflow receives all of them before it goes on; after a local leg that
failed instead (its count unknown), it waits one timer first. The client's
answers are signals too, and two of them may race: so a leg that follows
answers is an activity, not a local one (``patches.ACTIVITY_LEGS_AFTER_INPUT``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

from fastmcp_temporal.workflows.models import (
    LOCAL_LEG_PROGRESS_SIGNAL,
    LegOutcome,
    LegRequest,
    LocalLegProgress,
    TaskStart,
)
from fastmcp_temporal.workflows.patches import ACTIVITY_LEGS_AFTER_INPUT, patched

#: How long a task waits after a local leg that reports progress failed
#: (rather than returned), so the signals its attempts sent are applied in a
#: workflow task of their own before the one that ends the task.
AFTER_FAILED_LOCAL_LEG = timedelta(seconds=1)


def runs_locally(start: TaskStart, responses: dict[str, Any] | None) -> bool:
    """Whether the next leg is a local activity (``ACTIVITY_LEGS_AFTER_INPUT``)."""
    if not start.leg_policy.local:
        return False
    return responses is None or not patched(start, ACTIVITY_LEGS_AFTER_INPUT)


class LocalLegRunner:
    """Mixed into the task state machine; uses its ``_status`` and ``_touch``."""

    _status: str
    #: A running local leg's latest message, the round of the local leg that
    #: runs, and the highest signal ``seq`` received per leg attempt.
    _progress_message: str | None = None
    _local_leg_running: int | None = None
    _progress_seen: dict[str, int]

    def _setup_local_legs(self) -> None:
        self._progress_message = None
        self._local_leg_running = None
        self._progress_seen = {}

    def _touch(self) -> None:  # provided by the state machine
        raise NotImplementedError

    async def _run_local_leg(
        self,
        request: LegRequest,
        *,
        timeout: timedelta,
        until_deadline: timedelta | None,
        retry: RetryPolicy,
    ) -> LegOutcome:
        self._progress_message = None
        self._local_leg_running = request.round
        try:
            outcome = await workflow.execute_local_activity(
                request.tool_name,
                request,
                result_type=LegOutcome,
                start_to_close_timeout=timeout,
                schedule_to_close_timeout=until_deadline,
                retry_policy=retry,
                summary=f"{request.tool_name} · leg {request.round} (local)",
            )
        finally:
            self._local_leg_running = None
        if outcome.progress_leg is not None:
            leg, sent = outcome.progress_leg, outcome.progress_signals
            await workflow.wait_condition(lambda: self._progress_seen.get(leg, 0) >= sent)
        return outcome

    async def _after_failed_local_leg(self, request: LegRequest) -> None:
        if request.progress_signals:
            await workflow.sleep(AFTER_FAILED_LOCAL_LEG)

    @workflow.signal(name=LOCAL_LEG_PROGRESS_SIGNAL)
    def _on_local_leg_progress(self, report: LocalLegProgress) -> None:
        """A running local leg's progress: its message is the task's ``statusMessage``."""
        self._progress_seen[report.leg] = max(self._progress_seen.get(report.leg, 0), report.seq)
        running = self._local_leg_running
        if running is None or not report.leg.startswith(f"{running}."):
            return  # a late signal of a leg that has ended
        if self._status != "working" or report.message == self._progress_message:
            return
        self._progress_message = report.message
        self._touch()

    def _local_leg_message(self) -> str | None:
        """The ``statusMessage`` a working task's local leg gives it."""
        return self._progress_message if self._status == "working" else None
