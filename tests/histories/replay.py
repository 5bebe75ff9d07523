"""Loading a recorded history and replaying it the way a worker would run it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from fastmcp import FastMCP
from temporalio.client import WorkflowHistory
from temporalio.converter import ExternalStorage
from temporalio.worker import Replayer

from fastmcp_temporal import McpTasksPlugin

HISTORIES = Path(__file__).resolve().parent


def load_history(file: str) -> WorkflowHistory:
    """A recorded history, under the workflow id it ran with (a child's id derives from it)."""
    data = json.loads((HISTORIES / f"{file}.json").read_text())
    started = data["events"][0]["workflowExecutionStartedEventAttributes"]
    return WorkflowHistory.from_json(started["workflowId"], data)


def patch_ids(history: WorkflowHistory) -> list[str]:
    """The patch ids the history's markers record (the SDK's ``core_patch`` marker), in order."""
    return [
        json.loads(payload.data)["id"]
        for event in history.events
        if event.marker_recorded_event_attributes.marker_name == "core_patch"
        for payload in event.marker_recorded_event_attributes.details["patch-data"].payloads
    ]


def task_replayer(
    workflows: Sequence[type] = (),
    encryption_key: str | None = None,
    payload_storage: ExternalStorage | None = None,
) -> Replayer:
    """A replayer set up like a worker: ``McpTasksPlugin`` brings the task workflows,
    the task converter (with the codec for ``encryption_key``, the store of
    ``payload_storage``) and the sandbox settings; ``workflows`` are added
    (workflow tools, or a variant that takes over a workflow type)."""
    plugin = McpTasksPlugin(
        FastMCP("replay"),
        encryption_key=encryption_key,
        workflows=list(workflows),
        payload_storage=payload_storage,
    )
    return Replayer(workflows=[], plugins=[plugin])
