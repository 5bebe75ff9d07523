"""What a task's workflow reports to metrics: how tasks end, and how long they wait for input.

Only the workflow knows both for certain, for every task, whichever front end
created it and whether anyone ever polls it. It records them through
``workflow.metric_meter()``: the worker's Temporal runtime (a Prometheus
endpoint with ``TemporalTasks(metrics_port=...)``, see ``server.core.metrics``).
Recording is no command and never happens on replay, so histories are unchanged.
A workflow task that is retried after its worker died may record its change a
second time: the counts are at least once.
"""

from __future__ import annotations

from datetime import datetime

from temporalio import workflow

#: ``mcp_tasks_finished_total{tool, status}`` (``counters_total_suffix``).
FINISHED_COUNTER = "mcp_tasks_finished"
#: Seconds from parking in ``input_required`` to the last answer (or the end), per round.
INPUT_REQUIRED_HISTOGRAM = "mcp_input_required_seconds"
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})


class TransitionMetrics:
    """Fed every status change of one task's state machine."""

    def __init__(self, tool_name: str) -> None:
        self._tool = tool_name
        self._parked_since: datetime | None = None

    def changed(self, old: str, new: str) -> None:
        if new == "input_required":
            self._parked_since = workflow.now()
        elif old == "input_required" and self._parked_since is not None:
            waited = (workflow.now() - self._parked_since).total_seconds()
            self._parked_since = None
            workflow.metric_meter().create_histogram_float(
                INPUT_REQUIRED_HISTOGRAM, "Time tasks spend in input_required", "s"
            ).record(waited, {"tool": self._tool})
        if new in TERMINAL_STATUSES:
            workflow.metric_meter().create_counter(
                FINISHED_COUNTER, "Tasks that reached a terminal status"
            ).add(1, {"tool": self._tool, "status": new})
