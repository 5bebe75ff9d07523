"""Spread the suite's longest tests over its first two thirds, the longest first.

xdist feeds its workers in collection order (two tests each at a time,
``--maxschedchunk 1`` in ``pyproject.toml``). A test that takes 20-60 s, most of
it waiting on a heartbeat timeout, a drain or a restarted process, left for the
end keeps the run open while the other workers idle (a quiet run spent its last
~100 s at 20-70 % CPU); all of them at the start leave every worker waiting at
once and the CPU idle (the next run: ~100 s at 20-50 %). Spread out, each one's
waiting overlaps other workers' short tests, which keep both cores busy.

``SLOWEST`` is the call phase of a quiet run's ``--durations`` (6 s and more),
longest first; the command that made it:

    ./dev test --durations=40 | grep -E "^[0-9.]+s call" | awk '$1 >= 6 {print $3}'

A test missing from it, or one no longer slow, only costs time, never a result.
"""

from __future__ import annotations

import pytest

SLOWEST = (
    "tests/test_resilience.py::test_a_worker_without_the_key_leaves_every_task_to_one_that_has_it",
    "tests/test_hosts.py::test_a_tool_silent_past_claude_codes_idle_limit_is_kept_alive_by_the_server",
    "tests/test_hosts.py::test_claude_code_progress_keeps_its_idle_watchdog_from_aborting_the_call",
    "tests/test_remote_durability.py::test_a_function_tool_remote_step_reattaches_after_a_crash[ours]",
    "tests/test_resilience.py::test_four_lost_workers_during_one_leg_never_consume_the_task",
    "tests/test_remote_durability.py::test_a_function_tool_remote_step_reattaches_after_a_crash[peer]",
    "tests/test_remote_durability.py::test_a_killed_orchestrating_worker_reattaches_and_the_remote_body_runs_once[ours]",
    "tests/test_remote_durability.py::test_a_killed_orchestrating_worker_reattaches_and_the_remote_body_runs_once[peer]",
    "tests/test_orchestrator.py::test_the_orchestrator_example_runs_with_one_command",
    "tests/test_shared_embedded.py::test_kill_9_of_the_starter_keeps_the_other_working_and_loses_no_task",
    "tests/test_bad_input.py::test_random_tasks_params_are_answered_or_invalid_and_change_nothing",
    "tests/test_chaos.py::test_kill_9_the_worker_with_20_tasks_mid_leg",
    "tests/test_examples.py::test_the_demo_client_tours_the_demo_server",
    "tests/test_hosts.py::test_a_worker_killed_mid_call_only_delays_the_answer[claude-code]",
    "tests/test_hosts.py::test_a_worker_killed_mid_call_only_delays_the_answer[codex]",
    "tests/test_chaos.py::test_kill_and_restart_the_mcp_server_mid_flight",
    "tests/test_caller_in_task.py::test_a_token_expired_before_a_leg_is_not_installed_in_it",
    "tests/test_remote_durability.py::test_a_restarted_remote_is_reattached_and_completes",
    "tests/test_remote_stdio.py::test_a_stdio_remote_that_dies_is_started_again_by_the_next_step[ours]",
    "tests/test_crash.py::test_killed_worker_mid_leg_is_replaced_and_the_task_completes",
    "tests/test_resilience.py::test_five_drains_during_one_leg_never_consume_the_task",
    "tests/test_rounds.py::test_a_worker_crash_in_step_k_reruns_only_step_k",
    "tests/test_workflow_tools.py::test_a_worker_crash_between_steps_does_not_rerun_finished_steps",
    "tests/test_isolation.py::test_other_scopes_get_the_unknown_id_error_with_no_worker_up",
    "tests/test_sync_calls_processes.py::test_a_killed_worker_only_delays_the_answer",
    "tests/test_isolation.py::test_other_scopes_get_the_unknown_id_error_with_a_worker_up",
    "tests/test_encryption.py::test_a_task_nobody_can_read_waits_for_its_ttl_then_fails_naming_the_key[workflow-input-wrong-key]",
    "tests/test_encryption.py::test_a_task_nobody_can_read_waits_for_its_ttl_then_fails_naming_the_key[workflow-input-no-key]",
    "tests/test_parking.py::test_a_task_parked_past_its_ttl_fails_with_a_clear_message",
    "tests/test_sync_calls.py::test_progress_reaches_the_client_in_order[auto-steps]",
    "tests/test_sync_calls.py::test_progress_reaches_the_client_in_order[legacy-short_steps]",
    "tests/test_sync_calls.py::test_progress_reaches_the_client_in_order[legacy-steps]",
    "tests/test_sync_calls.py::test_progress_reaches_the_client_in_order[auto-short_steps]",
    "tests/test_versioning.py::test_tasks_stay_on_the_build_that_started_them",
    "tests/test_lifecycle.py::test_a_local_leg_is_retried_up_to_max_attempts",
    "tests/test_remote_stdio.py::test_a_stdio_remote_that_dies_is_started_again_by_the_next_step[peer]",
    "tests/test_sync_calls_processes.py::test_a_drained_front_end_hands_the_call_over_to_the_next_one[2026-07-28-raw-json-rpc]",
    "tests/test_sync_calls_processes.py::test_a_drained_front_end_hands_the_call_over_to_the_next_one[2026-07-28-fastmcp-client]",
    "tests/test_quota.py::test_twenty_racing_creators_never_open_more_than_the_limit[2]",
    "tests/test_large_payloads.py::test_a_front_end_reads_a_big_result_another_process_stored",
    "tests/test_hosts.py::test_codex_tool_timeout_cancels_the_task",
    "tests/test_hosts.py::test_codex_receives_each_progress_notification",
)
_RANK = {node_id: rank for rank, node_id in enumerate(SLOWEST)}


#: Where the last listed test starts: this share of the way through the run.
_SPREAD = 2 / 3


def longest_first(items: list[pytest.Item]) -> None:
    """Place the listed tests, longest first, evenly over the first two thirds."""
    slow = sorted((item for item in items if item.nodeid in _RANK), key=lambda i: _RANK[i.nodeid])
    rest = [item for item in items if item.nodeid not in _RANK]
    if not slow:
        return
    step = _SPREAD * len(items) / len(slow)
    spread: list[pytest.Item] = []
    placed = 0
    for item in rest:
        while slow and len(spread) >= step * placed:
            spread.append(slow.pop(0))
            placed += 1
        spread.append(item)
    items[:] = spread + slow
