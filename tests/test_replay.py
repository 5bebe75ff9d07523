"""The replay gate: every recorded task history replays on the current workflow code.

A task in flight is a history that a worker with *new* code will replay. The
histories in ``tests/histories`` were recorded from real tasks on a real dev
server (``python -m tests.histories.record``), one per path the task workflow
can take; here ``Replayer`` re-runs each one against ``McpTaskWorkflow``,
``McpToolTaskWorkflow`` and the recorded workflow tool, configured exactly as a
worker is (``McpTasksPlugin``: converter, codec, sandbox). A change to the
commands the workflow issues without ``workflow.patched`` fails here with a
non-determinism error. No Temporal server is needed.
"""

from __future__ import annotations

import pytest
from temporalio.api.enums.v1 import EventType

from fastmcp_temporal.server.codec import ENCODING, KEY_ENV
from tests.histories.paths import (
    ENCRYPTED_FILES,
    FILES,
    PATHS,
    TEST_ENCRYPTION_KEY,
    WORKFLOW_TOOL_CLASSES,
)
from tests.histories.replay import HISTORIES, load_history, task_replayer


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The converter is the test's choice; an exported key must not change it."""
    monkeypatch.delenv(KEY_ENV, raising=False)


def test_the_recorded_histories_are_exactly_the_declared_paths() -> None:
    """A history file that goes missing (or one nobody declared) fails the gate."""
    on_disk = sorted(path.name.removesuffix(".json") for path in HISTORIES.glob("*.json"))
    assert on_disk == sorted(FILES)
    assert len(PATHS) >= 12


#: How each recorded run ended (default: completed), so a re-recorded file that
#: no longer takes its path fails here rather than silently covering less.
ENDINGS = {
    "mcp_error_failure": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    "continue_as_new.run1": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    "cancel_running": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    "cancel_parked": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    "ttl_parked": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    "ttl_running": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
    "workflow_tool_failure.body": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    "workflow_tool_cancel_parked": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    "workflow_tool_cancel_parked.body": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    "max_rounds_exceeded": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
}
#: Event kinds a path's history must contain to be that path.
SIGNS = {
    "input_partial_then_full": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    "cancel_running": EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
    "cancel_parked": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
    "ttl_parked": EventType.EVENT_TYPE_TIMER_FIRED,
    "mrtr_first": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    "workflow_tool": EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
    "workflow_tool.body": EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
    "workflow_tool_failure": EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED,
    "workflow_tool_cancel_parked": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
    "workflow_tool_cancel_parked.body": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
    "local_leg": EventType.EVENT_TYPE_MARKER_RECORDED,
    "encrypted": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
}


@pytest.mark.parametrize("file", FILES)
def test_a_recorded_history_is_its_whole_path(file: str) -> None:
    kinds = [event.event_type for event in load_history(file).events]
    assert kinds[-1] == ENDINGS.get(file, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED)
    if file in SIGNS:
        assert SIGNS[file] in kinds
    if file == "local_leg":
        assert EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED not in kinds


@pytest.mark.parametrize("file", FILES)
async def test_a_recorded_history_replays_on_the_current_workflow_code(file: str) -> None:
    key = TEST_ENCRYPTION_KEY if file in ENCRYPTED_FILES else None
    result = await task_replayer(WORKFLOW_TOOL_CLASSES, key).replay_workflow(load_history(file))
    assert result.replay_failure is None


def test_the_encrypted_history_is_sealed() -> None:
    """The encrypted path really carries ciphertext, so its replay proves the codec in play."""
    for file in ENCRYPTED_FILES:
        started = load_history(file).events[0].workflow_execution_started_event_attributes
        (payload,) = started.input.payloads
        assert payload.metadata["encoding"] == ENCODING
    assert ENCRYPTED_FILES, "no encrypted path recorded"


async def test_the_encrypted_history_does_not_replay_without_its_key() -> None:
    """The control: without the key the same history cannot be replayed at all."""
    (file,) = ENCRYPTED_FILES
    result = await task_replayer(WORKFLOW_TOOL_CLASSES).replay_workflow(
        load_history(file), raise_on_replay_failure=False
    )
    assert result.replay_failure is not None
