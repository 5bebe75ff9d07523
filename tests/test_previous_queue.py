"""Upgrading an embedded data directory with tasks in flight on the old queue.

Before, the embedded default ran every server's tasks on ``mcp-tasks``; now on
``mcp-tasks-<server name>``. Real parts: an embedded Temporal in the test's
own data directory, the server before the upgrade (``task_queue="mcp-tasks"``)
parks one task and leaves another mid-leg, then the server after the upgrade
(or a ``fastmcp-temporal worker`` process) in the same directory finishes them.
"""

from __future__ import annotations

import logging
from pathlib import Path

import mcp_types
import pytest
from fastmcp import Client
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.client import ToolTask, call_tool_task
from fastmcp_temporal.server.cli.worker import READY_LINE
from fastmcp_temporal.server.temporal import previous_queue
from fastmcp_temporal.server.temporal.previous_queue import (
    PREVIOUS_EMBEDDED_QUEUE,
    count_open_tasks,
)
from tests.helpers import declares_elicitation, eventually
from tests.processes.running import BIN, Process
from tests.processes.upgraded_server import build

TIMEOUT_S = 60


async def answer(task: ToolTask) -> None:
    """Answer the task's one question (its key is the server's, e.g. ``1.ok``)."""
    parked = await task.wait(state="input_required", timeout=TIMEOUT_S)
    (key,) = parked.input_requests or {}
    await task.answer({key: mcp_types.ElicitResult(action="accept", content={})})


async def leave_tasks_on_the_old_queue(data_dir: Path, go_file: Path) -> tuple[str, str]:
    """The server before the upgrade: one task parked for input, one mid-leg when it stops."""
    before = TemporalTasks(data_dir=data_dir, ui=False, task_queue=PREVIOUS_EMBEDDED_QUEUE)
    async with Client(build(before), elicitation_handler=declares_elicitation) as client:
        parked = await call_tool_task(client, "ask", {})
        running = await call_tool_task(client, "crunch", {"go_file": str(go_file)})
        await parked.wait(state="input_required", timeout=TIMEOUT_S)
        assert (await running.status()).status == "working"
    return parked.task_id, running.task_id


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == previous_queue.__name__]


async def test_tasks_on_the_old_queue_finish_after_the_upgrade(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(previous_queue, "RECHECK_S", 0.2)
    go_file = tmp_path / "go"
    parked_id, running_id = await leave_tasks_on_the_old_queue(tmp_path, go_file)
    after = TemporalTasks(data_dir=tmp_path, ui=False)
    with caplog.at_level(logging.WARNING, logger=previous_queue.__name__):
        async with Client(build(after), elicitation_handler=declares_elicitation) as client:
            assert after.task_queue == "mcp-tasks-app"
            assert messages(caplog) == [
                "fastmcp-temporal: 2 task(s) started before the upgrade wait on task queue "
                "'mcp-tasks'; serving it too until they finish"
            ]
            go_file.touch()
            parked = ToolTask(client, "ask", parked_id)
            await answer(parked)
            await parked.wait(timeout=TIMEOUT_S)
            assert (await parked.result()).data == "answered"
            running = ToolTask(client, "crunch", running_id)
            assert (await running.result(timeout=TIMEOUT_S)).data == "crunched"
            await eventually(lambda: len(messages(caplog)) == 2, timeout=TIMEOUT_S)
            assert messages(caplog)[1] == (
                "fastmcp-temporal: no tasks left on task queue 'mcp-tasks'; stopping its worker"
            )
            new_task = await call_tool_task(client, "ask", {})
            await answer(new_task)
            await new_task.wait(timeout=TIMEOUT_S)
            assert (await new_task.result()).data == "answered"


async def test_only_the_tools_a_server_serves_make_it_poll_the_old_queue(tmp_path: Path) -> None:
    """Two servers sharing the data directory: one without these tools counts none."""
    go_file = tmp_path / "go"
    await leave_tasks_on_the_old_queue(tmp_path, go_file)
    after = TemporalTasks(data_dir=tmp_path, ui=False)
    async with Client(build(after)):
        assert after.dev_server is not None
        client = await TemporalClient.connect(after.dev_server.address)
        old = PREVIOUS_EMBEDDED_QUEUE
        assert await count_open_tasks(client, old, {"ask", "crunch", "elsewhere"}) == 2
        assert await count_open_tasks(client, old, {"ask"}) == 1
        assert await count_open_tasks(client, old, {"elsewhere", "it's"}) == 0
        assert await count_open_tasks(client, old, set()) == 0
        assert await count_open_tasks(client, after.task_queue, {"ask", "crunch"}) == 0
        go_file.touch()


async def test_a_worker_process_in_the_folder_finishes_them_too(tmp_path: Path) -> None:
    """``fastmcp-temporal worker`` joins the folder's server and serves the old queue."""
    go_file = tmp_path / "go"
    parked_id, running_id = await leave_tasks_on_the_old_queue(tmp_path, go_file)
    front_end = TemporalTasks(data_dir=tmp_path, ui=False, run_worker=False)
    async with Client(build(front_end), elicitation_handler=declares_elicitation) as client:
        command = [str(BIN / "fastmcp-temporal"), "worker", "tests/processes/upgraded_server.py"]
        worker = Process("worker", [*command, "--data-dir", str(tmp_path)], {}, tmp_path / "w.log")
        try:
            await worker.wait_for_output(READY_LINE)
            assert "2 task(s) started before the upgrade" in worker.output()
            go_file.touch()
            parked = ToolTask(client, "ask", parked_id)
            await answer(parked)
            await parked.wait(timeout=TIMEOUT_S)
            assert (await parked.result()).data == "answered"
            crunched = await ToolTask(client, "crunch", running_id).result(timeout=TIMEOUT_S)
            assert crunched.data == "crunched"
        finally:
            worker.stop()


async def test_a_failed_count_is_logged_and_serves_nothing(
    temporal_server: DevServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Start-up goes on when visibility refuses (here: a namespace Temporal does not know)."""
    client = await TemporalClient.connect(temporal_server.address, namespace="no-such-namespace")

    def no_worker(queue: str) -> Worker:
        raise AssertionError(f"no worker expected on {queue}")

    with caplog.at_level(logging.WARNING, logger=previous_queue.__name__):
        async with previous_queue.serving_previous_queue(client, {"ask"}, no_worker):
            pass
    (warning,) = messages(caplog)
    assert warning.startswith("fastmcp-temporal: could not count tasks on task queue 'mcp-tasks'")
    assert warning.endswith("tasks started there before the upgrade are not served by this process")


def renamed_reports(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [message for message in messages(caplog) if "which no process polls" in message]


async def test_a_renamed_servers_tasks_are_reported_with_the_command_that_finishes_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``alpha`` becomes ``beta``: its parked task waits on ``mcp-tasks-alpha``.

    ``beta`` cannot tell a rename from another server of the folder that is
    only stopped, so it does not run that task with its own tool; it says
    where the task waits and the command that finishes it -- which works.
    """
    command = [str(BIN / "fastmcp-temporal"), "worker", "tests/processes/upgraded_server.py"]
    folder = ["--data-dir", str(tmp_path)]
    # alpha's front end starts the folder's Temporal; its worker is a process of its own.
    alpha = TemporalTasks(data_dir=tmp_path, ui=False, run_worker=False)
    async with Client(build(alpha, "alpha"), elicitation_handler=declares_elicitation) as front:
        alpha_worker = Process(
            "alpha", [*command, *folder], {"UPGRADED_SERVER_NAME": "alpha"}, tmp_path / "a.log"
        )
        try:
            await alpha_worker.wait_for_output(READY_LINE)
            parked = await call_tool_task(front, "ask", {})
            await parked.wait(state="input_required", timeout=TIMEOUT_S)
            with caplog.at_level(logging.WARNING, logger=previous_queue.__name__):
                async with Client(build(TemporalTasks(data_dir=tmp_path, ui=False), "beta")):
                    pass
            assert renamed_reports(caplog) == [], "alpha is still served: nothing to report"
        finally:
            alpha_worker.stop()

        beta = TemporalTasks(data_dir=tmp_path, ui=False)
        with caplog.at_level(logging.WARNING, logger=previous_queue.__name__):
            async with Client(build(beta, "beta"), elicitation_handler=declares_elicitation) as c:
                assert beta.task_queue == "mcp-tasks-beta"
                (report,) = renamed_reports(caplog)
                assert report == (
                    "fastmcp-temporal: 1 open task(s) of this server's tools wait on task queue "
                    "'mcp-tasks-alpha', which no process polls (was this server called 'alpha' "
                    "before?). To finish them, run `fastmcp-temporal worker --task-queue "
                    f"mcp-tasks-alpha --data-dir {tmp_path.resolve()} <server.py>` until they "
                    "are done; otherwise they fail at the end of their TTL"
                )
                task = ToolTask(c, "ask", parked.task_id)
                assert (await task.status()).status == "input_required", "beta left it alone"
                drain = Process(
                    "drain",
                    [*command, "--task-queue", "mcp-tasks-alpha", *folder],
                    {},
                    tmp_path / "drain.log",
                )
                try:
                    await drain.wait_for_output(READY_LINE)
                    await answer(task)
                    assert (await task.result(timeout=TIMEOUT_S)).data == "answered"
                finally:
                    drain.stop()
