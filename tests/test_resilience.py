"""Infrastructure failures never consume a task: drains, lost workers, a misconfigured worker.

Real ``fastmcp-temporal worker`` processes on one queue, a worker-less front
end, the crash server's ``record_and_wait`` tool (each run of its body leaves a
marker naming its task; it finishes once the test writes ``release``).
"""

from __future__ import annotations

import asyncio
import itertools
import signal
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from fastmcp import Client, FastMCP
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import DevServer, LegPolicy, TemporalTasks
from fastmcp_temporal.client import ToolTask, call_tool_task
from fastmcp_temporal.server.cli.worker import READY_LINE
from fastmcp_temporal.server.core.codec import KEY_ENV
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.server.tasks.starter import ToolOptions
from tests.helpers import eventually, front_end
from tests.plain_calls import PlainClient, progress_sink
from tests.ports import run_server_async
from tests.processes.crash_server import mcp as crash_server
from tests.processes.remote_workflows import PATIENT_HEARTBEAT_S
from tests.processes.running import BIN, ROOT, Process
from tests.test_encryption import new_key

pytestmark = pytest.mark.chaos

SERVER = "tests/processes/resilient_server.py"


class Fleet:
    """``fastmcp-temporal worker`` processes on one queue, each with its own log."""

    def __init__(
        self, address: str, task_queue: str, logs: Path, heartbeat_timeout_s: float = 2
    ) -> None:
        self._env = {
            "TEMPORAL_ADDRESS": address,
            "RESILIENT_TASK_QUEUE": task_queue,
            "RESILIENT_HEARTBEAT_TIMEOUT_S": str(heartbeat_timeout_s),
            "PYTHONPATH": str(ROOT),  # the server module imports the crash server's tool
        }
        self._logs = logs
        self.workers: list[Process] = []

    async def start(self, key: str | None = None) -> Process:
        env = {**self._env, KEY_ENV: key or ""}
        worker = Process(
            f"worker-{len(self.workers) + 1}",
            [str(BIN / "fastmcp-temporal"), "worker", SERVER, "--graceful-timeout", "1"],
            env,
            self._logs / f"worker-{len(self.workers) + 1}.log",
        )
        self.workers.append(worker)
        await worker.wait_for_output(READY_LINE)
        return worker

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()


@asynccontextmanager
async def fleet(
    address: str, task_queue: str, logs: Path, heartbeat_timeout_s: float = 2
) -> AsyncIterator[Fleet]:
    workers = Fleet(address, task_queue, logs, heartbeat_timeout_s)
    try:
        yield workers
    finally:
        workers.stop()


def runs_of(runs: Path) -> list[str]:
    """The task id of every run of the body so far (one marker per run)."""
    return [marker.read_text() for marker in runs.glob("run-*")]


async def interrupt_one_leg(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
    *,
    interruptions: int,
    signum: int,
) -> tuple[str, list[str], list[str]]:
    """Run one leg, interrupting its worker ``interruptions`` times, rolling-deploy style.

    Each time, the next worker starts first, then the one running the leg gets
    ``signum``. Returns the final status, the runs recorded (their task ids,
    checked to be this task's), and what ``tasks/get`` said while the leg was
    being retried.

    A drain must hand the leg back by itself, so for SIGTERM the legs'
    heartbeat timeout is a minute: a worker that a loaded machine starves for
    a few seconds is then never found "lost" instead (with 2 s it was, in CI).
    """
    runs = tmp_path / "runs"
    runs.mkdir()
    retrying: list[str] = []
    heartbeat_timeout_s = 60 if signum == signal.SIGTERM else 2
    # The front end creates the task, so its leg policy is the one the legs keep.
    async with (
        fleet(temporal_server.address, task_queue, tmp_path, heartbeat_timeout_s) as workers,
        Client(
            front_end(
                temporal_client, task_queue, crash_server, heartbeat_timeout_s=heartbeat_timeout_s
            )
        ) as client,
    ):
        running = await workers.start()
        task = await call_tool_task(client, "record_and_wait", {"marker_dir": str(runs)})
        for interruption in range(1, interruptions + 1):
            await eventually(lambda n=interruption: len(runs_of(runs)) == n, timeout=90)
            successor = await workers.start()
            running.signal(signum)
            if signum == signal.SIGTERM:
                assert await running.exit_code(timeout=30) == 0, running.output()[-2000:]
            running = successor
            await eventually(lambda n=interruption: len(runs_of(runs)) == n + 1, timeout=90)
            retrying.append((await task.status()).status_message or "")
        (runs / "release").write_text("")
        final = await task.wait(timeout=60)
    assert set(runs_of(runs)) == {task.task_id}
    return final.status, runs_of(runs), retrying


async def test_five_drains_during_one_leg_never_consume_the_task(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """Each drain hands the leg back at once; the task outlives five of them."""
    status, runs, retrying = await interrupt_one_leg(
        temporal_server,
        temporal_client,
        task_queue,
        tmp_path,
        interruptions=5,
        signum=signal.SIGTERM,
    )
    assert status == "completed"
    assert len(runs) == 5 + 1, "the body ran once per drain plus once"
    # Handed back by the drain, not found dead by a heartbeat timeout.
    for attempt, message in enumerate(retrying, start=2):
        assert message.startswith(f"Retrying (attempt {attempt}): Worker is shutting down"), message


async def test_four_lost_workers_during_one_leg_never_consume_the_task(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """``kill -9`` four times: each loss is found by heartbeat timeout and the leg runs again."""
    status, runs, retrying = await interrupt_one_leg(
        temporal_server,
        temporal_client,
        task_queue,
        tmp_path,
        interruptions=4,
        signum=signal.SIGKILL,
    )
    assert status == "completed"
    assert len(runs) == 4 + 1, "the body ran once per lost worker plus once"
    for attempt, message in enumerate(retrying, start=2):
        assert message.startswith(f"Retrying (attempt {attempt}): activity Heartbeat timeout"), (
            message
        )


async def test_a_lost_worker_never_counts_against_a_local_leg(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """A local leg runs inside the workflow task: losing its worker starts it afresh.

    With ``max_attempts=1`` the leg survives two ``kill -9``: the attempts
    count only its own timeouts (the next worker takes the workflow task once
    its workflow task timeout passes: ``LOCAL_LEGS_TASK_TIMEOUT``, 2 s).
    """
    runs = tmp_path / "runs"
    runs.mkdir()
    mcp = FastMCP("front-end")
    mcp.add_extension(
        TemporalTasks(
            client=temporal_client,
            task_queue=task_queue,
            run_worker=False,
            leg_policy=LegPolicy(max_attempts=1, local_timeout_s=300),
            tools={"record_and_wait": ToolOptions(local_legs=True)},
        )
    )
    mcp.mount(crash_server)
    async with (
        fleet(temporal_server.address, task_queue, tmp_path) as workers,
        Client(mcp) as client,
    ):
        running = await workers.start()
        task = await call_tool_task(client, "record_and_wait", {"marker_dir": str(runs)})
        for lost in (1, 2):
            await eventually(lambda n=lost: len(runs_of(runs)) == n, timeout=90)
            successor = await workers.start()
            running.signal(signal.SIGKILL)
            running = successor
        await eventually(lambda: len(runs_of(runs)) == 3, timeout=90)
        (runs / "release").write_text("")
        final = await task.wait(timeout=60)
    assert final.status == "completed"
    assert runs_of(runs) == [task.task_id] * 3


async def test_a_worker_without_the_key_leaves_every_task_to_one_that_has_it(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """One worker holds the key, one a wrong key: all 20 tasks complete, each body ran once.

    The wrong worker gives back what it cannot read (a failed workflow task or a
    failed leg attempt, both retried) and says so in its log. (A task that no
    worker can read: ``test_encryption``.)
    """
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "release").write_text("")  # every leg finishes at once
    right, wrong = f"a:{new_key()}", f"b:{new_key()}"
    async with fleet(temporal_server.address, task_queue, tmp_path) as workers:
        right_worker = await workers.start(right)
        wrong_worker = await workers.start(wrong)
        async with Client(keyed_front_end(temporal_server.address, task_queue, right)) as client:
            tasks = await asyncio.gather(
                *(
                    call_tool_task(client, "record_and_wait", {"marker_dir": str(runs)})
                    for _ in range(20)
                )
            )
            finals = await asyncio.gather(*(task.wait(timeout=240) for task in tasks))
    assert [final.status for final in finals] == ["completed"] * 20
    assert Counter(runs_of(runs)) == {task.task_id: 1 for task in tasks}
    assert {f.result["structuredContent"]["result"] for f in finals if f.result} == {
        f"finished in {right_worker.pid}"
    }
    assert "Cannot decrypt a task payload" in wrong_worker.output()
    gave_back = await given_back(temporal_client, tasks)
    assert gave_back, "the wrong worker never got any work: the test proved nothing"


def keyed_front_end(address: str, task_queue: str, key: str) -> FastMCP:
    """A worker-less front end creating tasks under ``key``."""
    mcp = FastMCP("front-end")
    mcp.add_extension(
        TemporalTasks(
            address=address,
            task_queue=task_queue,
            encryption_key=key,
            run_worker=False,
            # No worker is killed here and every leg must run once: with 2 s (0.4 s of
            # slack after the SDK's throttled heartbeats) a starved worker's leg can be
            # taken for lost and run again.
            leg_policy=LegPolicy(heartbeat_timeout_s=PATIENT_HEARTBEAT_S),
        )
    )
    mcp.mount(crash_server)
    return mcp


async def given_back(temporal_client: TemporalClient, tasks: list[ToolTask]) -> int:
    """How many workflow tasks or leg attempts failed (were given back) across ``tasks``."""
    count = 0
    for task in tasks:
        handle = temporal_client.get_workflow_handle(workflow_id_for(task.task_id, None))
        async for event in handle.fetch_history_events():
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                count += 1
            elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
                count += event.activity_task_started_event_attributes.attempt - 1
    return count


def reporter(runs: Path, run: int) -> str:
    """The pid in the marker of the ``run``-th run (``run-<pid>-<id>``), oldest first."""
    markers = sorted(runs.glob("run-*"), key=lambda marker: marker.stat().st_mtime_ns)
    return markers[run - 1].name.split("-")[1]


async def test_a_rerun_after_a_lost_worker_reports_to_tasks_get_and_a_waiting_call(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """``kill -9`` mid-leg: once the leg runs again, its own reports reach ``tasks/get``
    and a waiting plain call, each a notification as before the loss. "Retrying (attempt
    2): ..." is news until the new attempt reports, not for the whole attempt (Temporal
    keeps the last failure on the pending activity for as long as it runs)."""
    plain_runs, task_runs = tmp_path / "plain", tmp_path / "task"
    for runs in (plain_runs, task_runs):
        runs.mkdir()
    seen, on_progress = progress_sink()
    front = front_end(temporal_client, task_queue, crash_server)
    async with (
        fleet(temporal_server.address, task_queue, tmp_path) as workers,
        run_server_async(front) as url,
        PlainClient(url, progress_handler=on_progress) as plain,  # type: ignore[arg-type]
        Client(url) as client,
    ):
        lost = await workers.start()
        waiting = asyncio.create_task(
            plain.call_tool("report_until_released", {"marker_dir": str(plain_runs)})
        )
        task = await call_tool_task(client, "report_until_released", {"marker_dir": str(task_runs)})
        await eventually(lambda: len(runs_of(plain_runs)) == len(runs_of(task_runs)) == 1, 90)
        first = reporter(plain_runs, 1)
        await eventually(lambda: any(f"{first}: report" in (m or "") for _, _, m in seen), 60)
        await workers.start()
        lost.signal(signal.SIGKILL)
        await eventually(lambda: len(runs_of(plain_runs)) == len(runs_of(task_runs)) == 2, 90)
        rerun, rerun_began = reporter(plain_runs, 2), len(seen)
        await eventually(lambda: any(f"{rerun}: report" in (m or "") for _, _, m in seen), 30)
        status = ""
        for _ in range(300):
            status = (await task.status()).status_message or ""
            if status.startswith(f"{reporter(task_runs, 2)}: report"):
                break
            await asyncio.sleep(0.1)
        assert status.startswith(f"{reporter(task_runs, 2)}: report"), status
        await asyncio.sleep(3)  # three seconds of the rerun: about one notification a second
        rerun_notifications = len(seen) - rerun_began
        for runs in (plain_runs, task_runs):
            (runs / "release").write_text("")
        result = await waiting
        assert (await task.wait(timeout=60)).status == "completed"
    assert result.data == f"finished in {rerun}"
    assert all(a[0] < b[0] for a, b in itertools.pairwise(seen)), "the progress only increases"
    assert rerun_notifications >= 2, seen[rerun_began:]
    print(f"notifications relayed in the rerun's first ~3 s: {rerun_notifications}")
