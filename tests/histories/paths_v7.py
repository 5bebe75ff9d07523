"""Generation 7: tasks started at patch level 1 (``workflows/patches.py``), no markers.

Since this generation a task carries the patch level of the front end that started
it (``TaskStart.patch_level``), and every patch up to generation 5 is folded into
level 1: a new task records no ``core_patch`` marker and no ``TemporalChangeVersion``
upsert, yet takes each patch's new branch. Recorded: an activity-leg task
(``plain_result``), a local-leg task through a question whose answered leg is an
activity (``local_leg``), a local leg that fails after reporting (the timer before
the end, ``local_leg_failed_after_progress``), and a level-1 task run by a worker of
the previous release, which knew no level and asked every patch
(``previous_release_worker``: its markers must still replay on this code).
"""

from __future__ import annotations

from unittest import mock

from fastmcp_temporal.workflows import patches
from tests.histories.harness import Harness, Run, TaskPath
from tests.histories.paths import local_leg, plain_result
from tests.histories.paths_v4 import local_leg_failed_after_progress

V7 = "v7"


def _as_v7(name: str, runs: dict[str, Run]) -> dict[str, Run]:
    (run,) = runs.values()
    return {f"{V7}/{name}": run}


async def _plain_result_v7(harness: Harness) -> dict[str, Run]:
    return _as_v7("plain_result", await plain_result(harness))


async def _local_leg_v7(harness: Harness) -> dict[str, Run]:
    return _as_v7("local_leg", await local_leg(harness))


async def _local_leg_failed_v7(harness: Harness) -> dict[str, Run]:
    return _as_v7("local_leg_failed_after_progress", await local_leg_failed_after_progress(harness))


async def previous_release_worker(harness: Harness) -> dict[str, Run]:
    """A level-1 task on a worker that asks every patch, as the previous release did.

    Record it alone (``record v7/previous_release_worker``): the stand-in for the old
    worker is this process's patch table, which other paths recorded at the same
    time would share.
    """
    unfolded = {patch_id: patches.PATCH_LEVEL + 1 for patch_id in patches._FOLDED_AT}
    with mock.patch.dict(patches._FOLDED_AT, unfolded):
        return _as_v7("previous_release_worker", await plain_result(harness))


SEVENTH_GENERATION: tuple[TaskPath, ...] = (
    TaskPath(f"{V7}/plain_result", _plain_result_v7, (f"{V7}/plain_result",)),
    TaskPath(f"{V7}/local_leg", _local_leg_v7, (f"{V7}/local_leg",)),
    TaskPath(
        f"{V7}/local_leg_failed_after_progress",
        _local_leg_failed_v7,
        (f"{V7}/local_leg_failed_after_progress",),
    ),
    TaskPath(
        f"{V7}/previous_release_worker",
        previous_release_worker,
        (f"{V7}/previous_release_worker",),
    ),
)
