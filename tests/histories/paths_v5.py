"""Generation 5: a local-leg task's answered leg recorded with ``activity-legs-after-input``.

The patch ``fastmcp-temporal/activity-legs-after-input`` (``workflows/local_legs.py``) is
asked only before a local-leg task's leg that follows the client's answers: that
leg runs as an activity (a marker, then ``ActivityTaskScheduled``), so a second
answer racing its end cannot cost its result. The first leg stays local. Only
``local_leg`` (a question, an answer, the result) takes it.
"""

from __future__ import annotations

from tests.histories.harness import Harness, Run, TaskPath
from tests.histories.paths import local_leg

V5 = "v5"


async def _local_leg_v5(harness: Harness) -> dict[str, Run]:
    return {f"{V5}/local_leg": run for run in (await local_leg(harness)).values()}


FIFTH_GENERATION: tuple[TaskPath, ...] = (
    TaskPath(f"{V5}/local_leg", _local_leg_v5, (f"{V5}/local_leg",)),
)
