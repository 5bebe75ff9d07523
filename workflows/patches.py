"""The task workflow's patches, and the patch level that spares new tasks their markers.

Every ``workflow.patched`` call that takes its new branch records a marker, and
temporalio adds an upsert of the ``TemporalChangeVersion`` search attribute next
to it: two history events per patch, in every run of every task, for as long as
the call stays in the code -- though only tasks started before the patch need
its old branch. ``workflow.deprecate_patch`` records the same two events
(measured: ``bench/investigations/2026-12-05-patch-markers``), so it spares a
new task nothing. A default tool's task paid four such events of its seventeen,
a short tool's six of fourteen.

So a task carries the patch level of the code that started it
(``TaskStart.patch_level``, set by the front end). A patch folded in at that
level or below is in effect from the task's first workflow task, with no marker:
its new branch is the only branch such a task ever takes, and its input, which
holds the level, is in its history, so every replay decides the same way.
Tasks started before the level existed carry level 0 and ask ``workflow.patched``
as they always did, so their histories replay unchanged.

One rolling-deploy case needs care: a task started by a new front end whose
workflow task runs on a worker of the previous release. That worker knows no
level, asks ``workflow.patched`` and records the markers; a worker of this
release replaying the history must then meet each marker with a ``patched``
call, or the replay fails (a non-deprecated marker with no matching call is a
non-determinism error). So while replaying, a folded patch is still asked --
to consume a marker that may be there; without one it records nothing, and
the answer is ignored: the level decides. Live, nothing is asked and nothing
recorded. ``tests/histories/v7/`` holds a history of each kind.
"""

from __future__ import annotations

from temporalio import workflow

from fastmcp_temporal.workflows.models import TaskStart

#: Legs scheduled after this patch may return a big result as a ``StoredResult``
#: (written once, by the leg); a leg scheduled before it returns the result
#: inline, and the workflow's result then holds a second stored copy.
RESULT_STORED_ONCE = "fastmcp-temporal/result-stored-once"
#: Legs retry until the task's deadline (recorded once per run, at its first
#: leg). Histories without it retry ``LegPolicy.max_attempts`` times.
RETRY_UNTIL_DEADLINE_PATCH = "fastmcp-temporal/legs-retry-until-deadline"
#: A leg that ends otherwise after its cancellation was requested cancels the
#: task (``leg_retry.ended_while_cancelling``). Histories without it failed the task.
LEG_CANCEL_WINS_PATCH = "fastmcp-temporal/leg-cancel-wins"
#: Local legs scheduled after this patch report progress by signalling the
#: workflow, and the workflow receives every such signal before it goes on
#: (a marker before the leg's command; see ``local_legs``).
LOCAL_LEG_PROGRESS = "fastmcp-temporal/local-leg-progress"
#: Legs that follow the client's answers run as activities even in a local-leg
#: task since this patch (a marker before such a leg's command). Answers are
#: signals, and two clients -- or one that retries -- may send them at once:
#: the second can reach Temporal while the leg they started runs inside its
#: workflow task, and if that leg ends the task, Temporal rejects the task's
#: commands with the leg's result (``UNHANDLED_COMMAND``): the body would run
#: twice. An activity leg's result is its own event, so nothing is lost; a leg
#: that waited for a person does not miss the activity round trip it saves.
ACTIVITY_LEGS_AFTER_INPUT = "fastmcp-temporal/activity-legs-after-input"

#: The level new tasks start at: every patch below is folded in.
PATCH_LEVEL = 1
#: The level at which each patch was folded in.
_FOLDED_AT: dict[str, int] = {
    RESULT_STORED_ONCE: 1,
    RETRY_UNTIL_DEADLINE_PATCH: 1,
    LEG_CANCEL_WINS_PATCH: 1,
    LOCAL_LEG_PROGRESS: 1,
    ACTIVITY_LEGS_AFTER_INPUT: 1,
}


def patched(start: TaskStart, patch_id: str) -> bool:
    """Whether ``start``'s task takes the new branch of ``patch_id`` here.

    ``workflow.patched`` for a task below the patch's level; otherwise ``True``,
    recording nothing (see the module docstring for the replayed case).
    """
    if start.patch_level < _FOLDED_AT[patch_id]:
        return workflow.patched(patch_id)
    if workflow.unsafe.is_replaying():
        workflow.patched(patch_id)  # a previous release's worker may have recorded it
    return True
