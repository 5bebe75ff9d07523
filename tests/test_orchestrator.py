"""``examples/orchestrator``: the one command runs, offline, and prints the triage report.

Real processes: ``run.py`` starts the support desk and the triage server (each
its own process, one embedded Temporal in this test's directory), runs the
scripted client (it answers the agent's sampling request and the desk's
question relayed by the agent), and stops everything it started.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from fastmcp import Client
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient

from examples.orchestrator.client import CUSTOMER, TICKET, scripted_model, scripted_user
from examples.orchestrator.triage import TriageAgent
from examples.orchestrator.triage_server import build
from fastmcp_temporal import DevServer
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.workflows.remote_models import ANSWER_TASK_ACTIVITY, CALL_TOOL_ACTIVITY
from tests.helpers import eventually
from tests.histories.replay import HISTORIES, load_history, task_replayer
from tests.processes.running import serving_on_free_port
from tests.remote_harness import history_text

ROOT = Path(__file__).resolve().parent.parent
#: The example's recorded histories, beside the other remote-calling ones.
#: One generation per change of what a remote call does in history, oldest first; the
#: newest is the one ``RECORD_REMOTE_HISTORIES=1`` writes. ``_2``: the first wait is a
#: short local activity (patch ``remote-local-first-wait``).
GENERATIONS = ["remote/orchestrator_triage", "remote/orchestrator_triage_2"]
RECORDED = GENERATIONS[-1]


def running_in(data_dir: Path) -> list[str]:
    """Command lines of live processes that use ``data_dir`` (servers, keeper, Temporal)."""
    listed = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    return [line for line in listed.stdout.splitlines() if str(data_dir) in line]


async def test_the_orchestrator_example_runs_with_one_command(tmp_path: Path) -> None:
    data_dir, report_file = tmp_path / "temporal", tmp_path / "report.json"
    run = await asyncio.create_subprocess_exec(
        sys.executable,
        "examples/orchestrator/run.py",
        "--data-dir",
        str(data_dir),
        "--report",
        str(report_file),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(run.communicate(), timeout=300)
    assert run.returncode == 0, stderr.decode()[-3000:]
    report = json.loads(report_file.read_text())
    assert report["plan"] == {
        "summary": "login fails after deploy",
        "component": "auth",
        "severity": "high",
    }
    assert report["planned_by"] == "scripted-planner", "the plan came from the client's model"
    assert report["investigation"]["environment"] == "production", (
        "the user's answer reached the desk"
    )
    assert report["investigation"]["findings"][0].startswith("auth: error rate")
    assert report["customer"] == {
        "email": "ada@example.com",
        "plan": "enterprise",
        "open_tickets": 2,
    }
    assert report["status"] == {"component": "auth", "healthy": False, "incident": "INC-1042"}
    assert report["similar"] == ["T-881 login loops after deploy", "T-874 SSO timeouts"]
    assert report["verdict"].startswith("page the auth on-call: INC-1042")
    assert "user asked: Which environment shows" in stdout.decode()
    # Both servers stopped by PID; the embedded Temporal follows its last user.
    await eventually(lambda: not running_in(data_dir), timeout=60)


async def test_the_triage_runs_on_the_sessions_temporal_and_its_history_replays(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """The same triage, its server in this process: the histories show each step
    (the model's and the user's answers are signals, each desk call an activity),
    hold no desk URL, and replay; ``RECORD_REMOTE_HISTORIES=1`` records them for
    the replay gate."""
    desk = [sys.executable, "-m", "examples.orchestrator.desk_server"]
    desk += ["--task-queue", f"{task_queue}-desk"]
    env = {
        "TEMPORAL_ADDRESS": temporal_server.address,
        "FASTMCP_TEMPORAL_DATA_DIR": str(tmp_path / "desk"),
    }
    async with serving_on_free_port("desk", desk, env, tmp_path / "desk.log", 120) as desk_url:
        server = build(
            desk_url,
            client=temporal_client,
            task_queue=task_queue,
            data_dir=tmp_path,
        )
        async with Client(
            server, sampling_handler=scripted_model, elicitation_handler=scripted_user
        ) as client:
            arguments = {"ticket": TICKET, "customer_email": CUSTOMER}
            task = await call_tool_task(client, "triage_agent", arguments)
            result = await task.result(timeout=120)
    assert result.structured_content is not None
    assert result.structured_content["investigation"]["environment"] == "production"
    workflow_id = workflow_id_for(task.task_id, None)
    histories = {
        "": await temporal_client.get_workflow_handle(workflow_id).fetch_history(),
        ".body": await temporal_client.get_workflow_handle(f"{workflow_id}-body").fetch_history(),
    }
    body_events = histories[".body"].events
    signalled = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    scheduled = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    assert len([e for e in body_events if e.event_type == signalled]) == 2, (
        "the model's plan and the user's answer"
    )
    activities = Counter(
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in body_events
        if e.event_type == scheduled
    )
    assert activities[CALL_TOOL_ACTIVITY] == 4, activities
    assert activities[ANSWER_TASK_ACTIVITY] == 1, activities
    for suffix in histories:
        text = await history_text(temporal_client, workflow_id + ("-body" if suffix else ""))
        assert desk_url.removeprefix("http://127.0.0.1") not in text, (
            "the desk's URL is the worker's, not history's"
        )
    replayer = task_replayer([TriageAgent])
    for history in histories.values():
        assert (await replayer.replay_workflow(history)).replay_failure is None
    if os.environ.get("RECORD_REMOTE_HISTORIES"):
        for suffix, history in histories.items():
            (HISTORIES / f"{RECORDED}{suffix}.json").write_text(history.to_json())


@pytest.mark.parametrize("generation", GENERATIONS)
@pytest.mark.parametrize("suffix", ["", ".body"])
async def test_the_recorded_triage_replays(generation: str, suffix: str) -> None:
    """The replay gate for the example: a recorded triage replays on today's code."""
    history = load_history(f"{generation}{suffix}")
    assert (await task_replayer([TriageAgent]).replay_workflow(history)).replay_failure is None
