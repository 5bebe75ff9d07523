"""The replay gate: every recorded task history replays on the current workflow code.

A task in flight is a history that a worker with *new* code will replay. The
histories in ``tests/histories`` were recorded from real tasks on a real dev
server (``python -m tests.histories.record``), one per path the task workflow
can take and per code generation (the top level before the patches
``legs-retry-until-deadline`` and ``progress-in-memo``, ``v2/`` with them,
``v3/`` with ``result-stored-once`` too, ... ``v7/`` at patch level 1: no markers);
here ``Replayer`` re-runs each one against ``McpTaskWorkflow``,
``McpToolTaskWorkflow`` and the recorded workflow tool, configured exactly as a
worker is (``McpTasksPlugin``: converter, codec, payload store, sandbox). A
change to the commands the workflow issues without ``workflow.patched`` fails
here with a non-determinism error. No Temporal server is needed.
"""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType, RetryState
from temporalio.converter import ExternalStorage

from fastmcp_temporal.activities.tool_leg import HANDED_BACK_ERROR_TYPE
from fastmcp_temporal.server.core.codec import ENCODING, KEY_ENV
from fastmcp_temporal.server.payloads.payload_store import DiskStorageDriver
from fastmcp_temporal.workflows.models import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    ProgressReport,
    TaskStart,
    TaskView,
)
from fastmcp_temporal.workflows.patches import (
    ACTIVITY_LEGS_AFTER_INPUT,
    LOCAL_LEG_PROGRESS,
    RESULT_STORED_ONCE,
    RETRY_UNTIL_DEADLINE_PATCH,
)
from fastmcp_temporal.workflows.tool_helpers import PROGRESS_IN_MEMO_PATCH
from tests.histories.catalog import (
    ENCRYPTED_FILES,
    FILES,
    PATHS,
    PAYLOAD_STORES,
    WORKFLOW_TOOL_CLASSES,
)
from tests.histories.paths import TEST_ENCRYPTION_KEY
from tests.histories.paths_v2 import STORED_PAYLOADS_THRESHOLD, V2
from tests.histories.paths_v3 import V3
from tests.histories.paths_v4 import V4
from tests.histories.paths_v5 import V5
from tests.histories.paths_v6 import V6
from tests.histories.paths_v7 import V7
from tests.histories.replay import HISTORIES, load_history, patch_ids, task_replayer


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The converter is the test's choice; an exported key must not change it."""
    monkeypatch.delenv(KEY_ENV, raising=False)


def test_the_recorded_histories_are_exactly_the_declared_paths() -> None:
    """A history file that goes missing (or one nobody declared) fails the gate."""
    # ``remote/``: remote-call histories, recorded and replayed by test_remote_durability,
    # test_remote_endings and test_orchestrator (recording them needs a remote MCP
    # server process, not this harness); ``crash/``: by test_crash (a worker process
    # it stops); ``agents/``: by the agent frameworks' tests (their plugins).
    on_disk = sorted(
        path.relative_to(HISTORIES).as_posix().removesuffix(".json")
        for path in HISTORIES.rglob("*.json")
        if path.parent.name not in ("remote", "crash", "agents")
    )
    assert on_disk == sorted(FILES)
    assert len(PATHS) >= 12


def test_every_remote_history_is_declared_by_the_test_that_replays_it() -> None:
    """A remote history nobody replays (or a declared one gone missing) fails the gate."""
    from tests import test_orchestrator, test_remote_durability, test_remote_endings

    declared = [
        *test_orchestrator.GENERATIONS,
        *test_remote_durability.GENERATIONS,
        *test_remote_endings.CREATE_CANCEL_GENERATIONS,
    ]
    on_disk = sorted(
        path.relative_to(HISTORIES).as_posix().removesuffix(".body.json").removesuffix(".json")
        for path in (HISTORIES / "remote").glob("*.json")
    )
    assert on_disk == sorted(name for name in declared for _ in ("task", "body"))


def test_every_agent_history_is_declared_by_the_test_that_replays_it() -> None:
    """An agent framework's recorded run, replayed by its test with its plugin."""
    declared = []
    for module in ("tests.test_openai_agents", "tests.test_langgraph"):
        try:
            declared.append(importlib.import_module(module).RECORDED)
        except pytest.skip.Exception:  # the framework's extra is not installed
            continue
    on_disk = sorted(
        path.relative_to(HISTORIES).as_posix().removesuffix(".body.json").removesuffix(".json")
        for path in (HISTORIES / "agents").glob("*.json")
    )
    assert declared, "no agent framework installed: the test extra brings them"
    assert on_disk == sorted(name for name in declared for _ in ("task", "body"))


def test_every_crash_history_is_declared_by_the_test_that_replays_it() -> None:
    from tests import test_crash

    on_disk = [
        path.relative_to(HISTORIES).as_posix().removesuffix(".json")
        for path in (HISTORIES / "crash").glob("*.json")
    ]
    assert on_disk == [test_crash.LEG_CANCEL_WINS_HISTORY]


#: How each recorded run ended (default: completed), so a re-recorded file that
#: no longer takes its path fails here rather than silently covering less. A
#: later generation's file (``v2/x``) ends as ``x`` unless it says otherwise.
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
    # The patched leg fails the task at its TTL; Temporal no longer times it out.
    f"{V2}/ttl_running": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    f"{V2}/leg_key_missing_until_ttl": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    f"{V4}/local_leg_failed_after_progress": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    f"{V7}/local_leg_failed_after_progress": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
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
    # The leg's deadline (schedule-to-close) ended it.
    f"{V2}/ttl_running": EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
    f"{V2}/leg_key_missing_until_ttl": EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
    # The body's progress went to its memo.
    f"{V2}/workflow_tool.body": EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
    # The local leg's progress signals; after a failed one, the timer before the end.
    f"{V4}/local_leg_progress": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    f"{V4}/local_leg_failed_after_progress": EventType.EVENT_TYPE_TIMER_FIRED,
    f"{V7}/local_leg_failed_after_progress": EventType.EVENT_TYPE_TIMER_FIRED,
}


def _base(file: str) -> str:
    return file.split("/")[-1]


def _declared(table: dict[str, EventType.ValueType], file: str) -> EventType.ValueType | None:
    """``file``'s entry; a ``v3/x`` without one is ``v2/x``, a ``v2/x`` without one is ``x``."""
    candidates = [file]
    if file.startswith(f"{V3}/"):
        candidates.append(f"{V2}/{_base(file)}")
    candidates.append(_base(file))
    return next((table[name] for name in candidates if name in table), None)


@pytest.mark.parametrize("file", FILES)
def test_a_recorded_history_is_its_whole_path(file: str) -> None:
    kinds = [event.event_type for event in load_history(file).events]
    completed = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    assert kinds[-1] == (_declared(ENDINGS, file) or completed)
    sign = _declared(SIGNS, file)
    if sign is not None:
        assert sign in kinds
    if _base(file) == "local_leg":
        # Both legs local; since ``activity-legs-after-input`` the answered one is an activity.
        answered_leg_activities = 1 if file.startswith((f"{V5}/", f"{V7}/")) else 0
        assert kinds.count(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) == answered_leg_activities


#: Runs that never reached a leg, so never asked for the leg patches.
WITHOUT_LEG = {"workflow_tool_cancel_parked"}


@pytest.mark.parametrize("file", FILES)
def test_each_generation_took_its_branch_of_the_patches(file: str) -> None:
    """Generation 1 is the old branch of every patch; ``v2`` took the new one of the
    first two (a task run at its first leg, a workflow tool's body at its first
    report), ``v3`` of ``result-stored-once`` too (a task run at its first leg),
    ``v4`` (local legs only) of ``local-leg-progress`` too, ``v5`` (a local-leg task's
    answered leg) of ``activity-legs-after-input`` too; ``v5/sealed_caller``, a task with
    activity legs, asks only the two patches every such task asks; ``v6`` (a last progress
    report in the task's result) asks no patch of its own; ``v7`` (patch level 1) takes every
    new branch and asks no patch at all, except on the previous release's worker."""
    patches = set(patch_ids(load_history(file)))
    generation = file.split("/")[0] if "/" in file else None
    if generation is None:
        assert patches == set()
    elif generation == V7:
        started = load_history(file).events[0].workflow_execution_started_event_attributes
        assert TaskStart.model_validate_json(started.input.payloads[0].data).patch_level == 1
        previous = file == f"{V7}/previous_release_worker"
        assert patches == ({RETRY_UNTIL_DEADLINE_PATCH, RESULT_STORED_ONCE} if previous else set())
    elif file.endswith(".body"):
        assert patches == {PROGRESS_IN_MEMO_PATCH}
    elif _base(file) in WITHOUT_LEG:
        assert patches == set()
    elif generation == V2:
        assert patches == {RETRY_UNTIL_DEADLINE_PATCH}
    elif generation == V4 or file == f"{V6}/final_progress_local_leg":  # local legs
        assert patches == {RETRY_UNTIL_DEADLINE_PATCH, RESULT_STORED_ONCE, LOCAL_LEG_PROGRESS}
    elif generation == V5 and _base(file) == "local_leg":
        assert patches == {
            RETRY_UNTIL_DEADLINE_PATCH,
            RESULT_STORED_ONCE,
            LOCAL_LEG_PROGRESS,
            ACTIVITY_LEGS_AFTER_INPUT,
        }
    else:
        assert patches == {RETRY_UNTIL_DEADLINE_PATCH, RESULT_STORED_ONCE}


def test_the_v2_body_reports_progress_without_signalling_its_task() -> None:
    """Two reports and one ``ask``: one signal to the task (the ask), two memo writes."""
    kinds = [event.event_type for event in load_history(f"{V2}/workflow_tool.body").events]
    assert kinds.count(EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED) == 1
    assert kinds.count(EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED) == 2


def test_the_drained_leg_was_handed_back_then_succeeded() -> None:
    events = list(load_history(f"{V2}/drained_leg_handed_back").events)
    (started,) = [e for e in events if e.HasField("activity_task_started_event_attributes")]
    attributes = started.activity_task_started_event_attributes
    assert attributes.attempt == 2
    assert attributes.last_failure.application_failure_info.type == HANDED_BACK_ERROR_TYPE
    assert any(e.HasField("activity_task_completed_event_attributes") for e in events)


def test_the_undecryptable_leg_retried_until_the_deadline() -> None:
    """Every attempt failed to decrypt; the deadline, not a count, ended the retries."""
    events = list(load_history(f"{V2}/leg_key_missing_until_ttl").events)
    (started,) = [e for e in events if e.HasField("activity_task_started_event_attributes")]
    (failed,) = [e for e in events if e.HasField("activity_task_failed_event_attributes")]
    assert started.activity_task_started_event_attributes.attempt >= 2
    attributes = failed.activity_task_failed_event_attributes
    assert attributes.retry_state == RetryState.RETRY_STATE_TIMEOUT
    assert attributes.failure.cause.message.startswith("Cannot decrypt a task payload")


def _committed_store(file: str, into: Path) -> ExternalStorage:
    """The blobs ``file`` refers to, copied (a replay may write, the committed ones stay as is)."""
    shutil.copytree(HISTORIES / PAYLOAD_STORES[file], into)
    driver = DiskStorageDriver(into, max_payload_size=DEFAULT_MAX_PAYLOAD_BYTES)
    return ExternalStorage(drivers=[driver], payload_size_threshold=STORED_PAYLOADS_THRESHOLD)


@pytest.mark.parametrize("file", FILES)
async def test_a_recorded_history_replays_on_the_current_workflow_code(
    file: str, tmp_path: Path
) -> None:
    key = TEST_ENCRYPTION_KEY if file in ENCRYPTED_FILES else None
    storage = _committed_store(file, tmp_path / "store") if file in PAYLOAD_STORES else None
    replayer = task_replayer(WORKFLOW_TOOL_CLASSES, key, storage)
    result = await replayer.replay_workflow(load_history(file))
    assert result.replay_failure is None


@pytest.mark.parametrize("file", [f"{V6}/final_progress", f"{V6}/final_progress_local_leg"])
def test_the_v6_task_ends_with_its_last_progress_report(file: str) -> None:
    """The replay above ran these on the current code: the new payload field replays."""
    (result,) = (
        load_history(file).events[-1].workflow_execution_completed_event_attributes.result.payloads
    )
    view = TaskView.model_validate_json(result.data)
    assert view.final_progress == ProgressReport(progress=1, total=1, message="done")


def test_the_stored_history_holds_references_not_payloads() -> None:
    """Its argument and result left the history: the replay above really read the blobs.

    From ``v3`` on, the result is the leg's own blob: the workflow's result is
    inline and names it (``stored_result``) instead of being a blob itself.
    """
    assert PAYLOAD_STORES, "no history with stored payloads recorded"
    for file in PAYLOAD_STORES:
        events = list(load_history(file).events)
        (argument,) = events[0].workflow_execution_started_event_attributes.input.payloads
        (result,) = events[-1].workflow_execution_completed_event_attributes.result.payloads
        assert argument.external_payloads, argument
        if file.startswith(f"{V2}/"):
            assert result.external_payloads, result
        else:
            view = TaskView.model_validate_json(result.data)
            assert view.result is None and view.stored_result is not None, view


async def test_the_stored_history_does_not_replay_without_its_blobs(tmp_path: Path) -> None:
    """The control: the same store, emptied, cannot rebuild the task."""
    for file in PAYLOAD_STORES:
        empty = tmp_path / file
        empty.mkdir(parents=True)
        storage = ExternalStorage(
            drivers=[DiskStorageDriver(empty, max_payload_size=DEFAULT_MAX_PAYLOAD_BYTES)],
            payload_size_threshold=STORED_PAYLOADS_THRESHOLD,
        )
        result = await task_replayer(WORKFLOW_TOOL_CLASSES, None, storage).replay_workflow(
            load_history(file), raise_on_replay_failure=False
        )
        assert result.replay_failure is not None


def test_the_encrypted_history_is_sealed() -> None:
    """The encrypted path really carries ciphertext, so its replay proves the codec in play."""
    for file in ENCRYPTED_FILES:
        started = load_history(file).events[0].workflow_execution_started_event_attributes
        (payload,) = started.input.payloads
        assert payload.metadata["encoding"] == ENCODING
    assert ENCRYPTED_FILES, "no encrypted path recorded"


@pytest.mark.parametrize("file", sorted(ENCRYPTED_FILES))
async def test_an_encrypted_history_does_not_replay_without_its_key(file: str) -> None:
    """The control: without the key the same history cannot be replayed at all."""
    result = await task_replayer(WORKFLOW_TOOL_CLASSES).replay_workflow(
        load_history(file), raise_on_replay_failure=False
    )
    assert result.replay_failure is not None
