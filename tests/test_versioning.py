"""Worker versioning on the real dev server, with real worker processes.

Build A (``TEMPORAL_DEPLOYMENT_NAME`` / ``TEMPORAL_WORKER_BUILD_ID``, as the
Temporal Worker Controller sets them) serves the first tasks; build B
(``--deployment-name`` / ``--build-id``) is deployed beside it and made current
with the ``temporal`` CLI, as an operator rolls out. Tasks A started stay on A
to their end -- a parked task answered after the switch, its continue-as-new
run, a local leg, a workflow tool's child -- while B takes the new ones; then A has no
pinned task left and can be retired. Without a version nothing changes.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType, RoutingConfigUpdateState
from temporalio.api.workflowservice.v1 import DescribeWorkerDeploymentRequest
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowHandle
from temporalio.common import VersioningBehavior

from fastmcp_temporal import DevServer, TemporalTasks, WorkerVersioning
from fastmcp_temporal.server.cli.worker import READY_LINE
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.server.tasks.starter import ToolOptions
from fastmcp_temporal.server.temporal.versioning import BUILD_ID_ENV, DEPLOYMENT_NAME_ENV
from tests import forks
from tests.ports import run_server_async
from tests.processes import versioned_server
from tests.processes.running import BIN, ROOT, Process
from tests.wire import RawMcp

SERVER = "tests/processes/versioned_server.py"
ACCEPT = {"action": "accept", "content": {}}


async def set_current(address: str, deployment: str, build_id: str) -> None:
    """``temporal worker deployment set-current-version``, once the version's workers poll."""
    args = [
        str(BIN / "temporal"),
        "worker",
        "deployment",
        "set-current-version",
        "--address",
        address,
        "--deployment-name",
        deployment,
        "--build-id",
        build_id,
        "--yes",
    ]
    deadline = asyncio.get_running_loop().time() + 60  # only a failure waits it out
    while True:
        done = await asyncio.to_thread(subprocess.run, args, capture_output=True, text=True)
        if done.returncode == 0:
            break
        # The version exists once its first worker has polled.
        assert asyncio.get_running_loop().time() < deadline, done.stderr
        await asyncio.sleep(0.5)
    await routing_propagated(address, deployment)


async def routing_propagated(address: str, deployment: str) -> None:
    """Until the new current version has reached every partition of the deployment's
    task queues: Temporal propagates it after ``set-current-version`` answers, and a
    task started before then may still go to the previous version's workers."""
    client = await TemporalClient.connect(address)
    request = DescribeWorkerDeploymentRequest(namespace="default", deployment_name=deployment)
    deadline = asyncio.get_running_loop().time() + 60  # only a failure waits it out
    while True:
        described = await client.workflow_service.describe_worker_deployment(request)
        state = described.worker_deployment_info.routing_config_update_state
        if state == RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED:
            return
        assert asyncio.get_running_loop().time() < deadline, f"routing update state {state}"
        await asyncio.sleep(0.2)


def worker(name: str, task_queue: str, address: str, log: Path, *args: str, **env: str) -> Process:
    return Process(
        name,
        [str(BIN / "fastmcp-temporal"), "worker", SERVER, "--graceful-timeout", "1", *args],
        # PYTHONPATH: the server module imports the tests' workflow tool.
        {"TEMPORAL_ADDRESS": address, "VERSIONED_TASK_QUEUE": task_queue, "PYTHONPATH": str(ROOT)}
        | env,
        log,
    )


async def poll(front: RawMcp, task_id: str, *statuses: str, timeout: float = 60) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        task = await front.result("tasks/get", {"taskId": task_id})
        if task["status"] in statuses:
            return task
        assert asyncio.get_running_loop().time() < deadline, f"never {statuses}: {task}"
        await asyncio.sleep(0.1)


async def create(front: RawMcp, tool: str, arguments: dict[str, Any]) -> str:
    created = await front.result("tools/call", {"name": tool, "arguments": arguments})
    assert created["resultType"] == "task", created
    return str(created["taskId"])


async def answer(front: RawMcp, task_id: str, response: dict[str, Any]) -> None:
    (key,) = (await poll(front, task_id, "input_required"))["inputRequests"]
    await front.result("tasks/update", {"taskId": task_id, "inputResponses": {key: response}})


async def version_of(handle: WorkflowHandle[Any, Any]) -> tuple[int, str]:
    """The (latest run's) versioning behaviour and build id, as Temporal records them."""
    info = (await handle.describe()).raw_description.workflow_execution_info.versioning_info
    return info.behavior, info.deployment_version.build_id


async def activity_workers(handle: WorkflowHandle[Any, Any]) -> set[str]:
    """The identities (``pid@host``) of the workers that started this run's activities."""
    return {
        event.activity_task_started_event_attributes.identity
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    }


async def pinned_running(client: TemporalClient, deployment: str, build_id: str) -> int:
    """What an operator checks before retiring a build: its open pinned workflows."""
    query = (
        f"TemporalWorkerDeploymentVersion = '{deployment}:{build_id}' "
        "AND ExecutionStatus = 'Running'"
    )
    return (await client.count_workflows(query)).count


async def eventually_count(
    client: TemporalClient, deployment: str, build_id: str, expected: int
) -> None:
    deadline = asyncio.get_running_loop().time() + 60  # only a failure waits it out
    while (found := await pinned_running(client, deployment, build_id)) != expected:
        assert asyncio.get_running_loop().time() < deadline, f"{found} != {expected}"
        await asyncio.sleep(0.2)


async def test_tasks_stay_on_the_build_that_started_them(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    address = temporal_server.address
    deployment = f"mcp-{uuid.uuid4().hex[:8]}"
    (tmp_path / "release").write_text("")  # the workflow tool's last step does not wait
    # A stateless front end; one leg per workflow run, so a second leg is a continue-as-new.
    front_end = versioned_server.build(
        TemporalTasks(
            client=temporal_client,
            task_queue=task_queue,
            run_worker=False,
            rounds_per_run=1,
            tools={"ask_locally": ToolOptions(local_legs=True)},
        )
    )
    build_a = worker(
        "worker-A",
        task_queue,
        address,
        tmp_path / "worker-A.log",
        **{DEPLOYMENT_NAME_ENV: deployment, BUILD_ID_ENV: "A"},
    )
    build_b: Process | None = None
    try:
        await build_a.wait_for_output(READY_LINE)
        assert f"version {deployment}.A (pinned)" in build_a.output()
        await set_current(address, deployment, "A")
        async with run_server_async(front_end) as url:
            front = RawMcp(url)
            parked = await create(front, "ask_then_answer", {})
            first_leg = await poll(front, parked, "input_required")
            (question,) = first_leg["inputRequests"].values()
            assert question["params"]["message"] == f"leg 1 ran in {build_a.pid}; go on?"
            local = await create(front, "ask_locally", {})
            await poll(front, local, "input_required")
            agent = await create(front, "greeter_agent", {"marker_dir": str(tmp_path)})
            await poll(front, agent, "input_required")
            # The three tasks and the workflow tool's child run pinned to A.
            await eventually_count(temporal_client, deployment, "A", 4)

            build_b = worker(
                "worker-B",
                task_queue,
                address,
                tmp_path / "worker-B.log",
                "--deployment-name",
                deployment,
                "--build-id",
                "B",
            )
            await build_b.wait_for_output(READY_LINE)
            await set_current(address, deployment, "B")

            fresh = await create(front, "whoami", {})
            fresh_end = await poll(front, fresh, "completed", "failed")
            await answer(front, parked, ACCEPT)
            parked_end = await poll(front, parked, "completed", "failed")
            await answer(front, local, ACCEPT)
            local_end = await poll(front, local, "completed", "failed")
            await answer(front, agent, {"action": "accept", "content": {"name": "Ada"}})
            agent_end = await poll(front, agent, "completed", "failed")
            await eventually_count(temporal_client, deployment, "A", 0)  # A may retire
    finally:
        build_a.stop()
        if build_b is not None:
            build_b.stop()

    assert fresh_end["result"]["structuredContent"] == {"result": f"ran in {build_b.pid}"}
    assert parked_end["result"]["structuredContent"] == {"result": f"leg 2 ran in {build_a.pid}"}
    assert local_end["result"]["structuredContent"] == {"result": f"leg 2 ran in {build_a.pid}"}
    assert agent_end["result"]["structuredContent"]["greeting"] == "Hello, Ada!"

    pinned = VersioningBehavior.PINNED
    handle = temporal_client.get_workflow_handle(workflow_id_for(parked, None))
    description = await handle.describe()
    assert description.run_id != description.raw_description.workflow_execution_info.first_run_id
    assert await version_of(handle) == (pinned, "A"), "the continue-as-new run stayed on A"
    assert await version_of(temporal_client.get_workflow_handle(workflow_id_for(fresh, None))) == (
        pinned,
        "B",
    )
    agent_id = workflow_id_for(agent, None)
    assert await version_of(temporal_client.get_workflow_handle(agent_id)) == (pinned, "A")
    child = temporal_client.get_workflow_handle(f"{agent_id}-body")
    assert await version_of(child) == (pinned, "A")
    # Both of the child's steps (one after the switch) ran in A's process.
    assert {identity.split("@")[0] for identity in await activity_workers(child)} == {
        str(build_a.pid)
    }


async def test_the_first_versioned_deploy_takes_over_unversioned_tasks(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """Tasks in flight on unversioned workers move to the first current version.

    Unlike a pinned task, an unversioned one goes to the current version at its
    next step (and is pinned there): the first versioned build must replay the
    unversioned build's histories, so it should change no workflow code.
    """
    address = temporal_server.address
    deployment = f"mcp-{uuid.uuid4().hex[:8]}"
    front_end = versioned_server.build(
        TemporalTasks(client=temporal_client, task_queue=task_queue, run_worker=False)
    )
    unversioned = worker("unversioned", task_queue, address, tmp_path / "unversioned.log")
    versioned: Process | None = None
    try:
        await unversioned.wait_for_output(READY_LINE)
        assert "unversioned" in unversioned.output()
        async with run_server_async(front_end) as url:
            front = RawMcp(url)
            parked = await create(front, "ask_then_answer", {})
            await poll(front, parked, "input_required")
            versioned = worker(
                "versioned",
                task_queue,
                address,
                tmp_path / "versioned.log",
                "--deployment-name",
                deployment,
                "--build-id",
                "A",
            )
            await versioned.wait_for_output(READY_LINE)
            await set_current(address, deployment, "A")
            fresh = await create(front, "whoami", {})
            fresh_end = await poll(front, fresh, "completed", "failed")
            # A's first task ran there: the queue already routes to A.
            await answer(front, parked, ACCEPT)
            parked_end = await poll(front, parked, "completed", "failed")
    finally:
        unversioned.stop()
        if versioned is not None:
            versioned.stop()
    assert fresh_end["result"]["structuredContent"] == {"result": f"ran in {versioned.pid}"}
    assert parked_end["result"]["structuredContent"] == {"result": f"leg 2 ran in {versioned.pid}"}
    handle = temporal_client.get_workflow_handle(workflow_id_for(parked, None))
    assert await version_of(handle) == (VersioningBehavior.PINNED, "A")
    legs = {identity.split("@")[0] for identity in await activity_workers(handle)}
    assert legs == {str(unversioned.pid), str(versioned.pid)}, "leg 1 unversioned, leg 2 on A"


async def test_a_versioned_in_process_worker_lets_temporal_route(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str
) -> None:
    """``TemporalTasks(versioning=...)``: no eager start (it would pin off the current version)."""
    deployment = f"mcp-{uuid.uuid4().hex[:8]}"
    extension = TemporalTasks(
        client=temporal_client,
        task_queue=task_queue,
        versioning=WorkerVersioning(deployment, "solo"),
    )
    server = versioned_server.build(extension)
    async with run_server_async(server) as url:
        assert extension.engine.eager_start is False
        await set_current(temporal_server.address, deployment, "solo")
        front = RawMcp(url)
        task_id = await create(front, "whoami", {})
        final = await poll(front, task_id, "completed", "failed")
    assert final["result"]["structuredContent"] == {"result": f"ran in {os.getpid()}"}
    handle = temporal_client.get_workflow_handle(workflow_id_for(task_id, None))
    assert await version_of(handle) == (VersioningBehavior.PINNED, "solo")


async def test_without_a_version_nothing_changes(
    temporal_client: TemporalClient, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DEPLOYMENT_NAME_ENV, raising=False)
    monkeypatch.delenv(BUILD_ID_ENV, raising=False)
    extension = TemporalTasks(client=temporal_client, task_queue=task_queue)
    async with run_server_async(versioned_server.build(extension)) as url:
        assert extension.engine.eager_start is True
        front = RawMcp(url)
        task_id = await create(front, "whoami", {})
        final = await poll(front, task_id, "completed", "failed")
    assert final["status"] == "completed"
    handle = temporal_client.get_workflow_handle(workflow_id_for(task_id, None))
    assert await version_of(handle) == (VersioningBehavior.UNSPECIFIED, "")


def test_the_version_comes_from_arguments_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(DEPLOYMENT_NAME_ENV, raising=False)
    monkeypatch.delenv(BUILD_ID_ENV, raising=False)
    assert WorkerVersioning.resolve() is None
    monkeypatch.setenv(BUILD_ID_ENV, "sha1")
    with pytest.raises(ValueError, match="both a deployment name and a build id"):
        WorkerVersioning.resolve()
    monkeypatch.setenv(DEPLOYMENT_NAME_ENV, "mcp")
    assert WorkerVersioning.resolve() == WorkerVersioning("mcp", "sha1")
    assert WorkerVersioning.resolve(build_id="sha2") == WorkerVersioning("mcp", "sha2")
    with pytest.raises(ValueError, match=r"without '\.'"):
        WorkerVersioning("mcp.tasks", "sha1")
    with pytest.raises(ValueError, match="PINNED or AUTO_UPGRADE"):
        WorkerVersioning("mcp", "sha1", VersioningBehavior.UNSPECIFIED)


def test_a_half_configured_worker_refuses_to_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in (DEPLOYMENT_NAME_ENV, BUILD_ID_ENV)}
    done = forks.run(
        [str(BIN / "fastmcp-temporal"), "worker", SERVER, "--build-id", "B"],
        env={**env, "TEMPORAL_ADDRESS": "127.0.0.1:1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "needs both a deployment name and a build id" in done.stderr
