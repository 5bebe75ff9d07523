"""The one clock of a task's progress: how fresh anything a running leg says can be.

A leg heartbeats its progress at most once a ``TICK_S`` (``activities.tool_leg``),
a local leg signals it no more often (``activities.progress``), and the front
end's worker flushes heartbeats to Temporal at that throttle
(``server.temporal.in_process_worker``). Nothing a read of the task finds is
fresher than that, so the waiting calls (``server.protocol.call_waits``), the
watch of a running task (``server.tasks.task_watch``) and the progress relayed
to a client (``server.protocol.call_progress``) tick at the same pace: a faster
reader would only read the same report again.

Here, below both sides (``workflows/`` and ``activities/`` import nothing of
``server/``), so each imports the same number. Workflow code does not use it:
its timers are recorded in histories, and a change of one is a replay matter.
"""

from __future__ import annotations

from datetime import timedelta

#: The heartbeat throttle, and the pace of every reader of what a leg reports.
TICK_S = 1.0
TICK = timedelta(seconds=TICK_S)
