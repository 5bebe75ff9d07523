"""Big arguments and results past Temporal's 2 MB limit: external payload storage.

Real parts throughout: the session's Temporal dev server, FastMCP clients over
the in-memory transport, the disk store in a temporary data dir, and the real
S3 driver over HTTP against ``moto`` in server mode (started here on a free
port). Each test also reads Temporal's own history to prove the big payload
left it: only a reference is stored there.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.elicitation import ElicitResult
from mcp.shared.exceptions import MCPError
from mcp_types import TextContent
from temporalio.api.common.v1 import Payload
from temporalio.client import Client as TemporalClient
from temporalio.converter import (
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
    StorageDriverWorkflowInfo,
)
from temporalio.worker import Replayer

from fastmcp_temporal import DevServer, McpTasksPlugin, TemporalTasks, workflow_tool
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.cli.worker import READY_LINE
from fastmcp_temporal.server.payloads.payload_store import (
    STORE_ENV,
    DiskStorageDriver,
    PayloadStoreSettings,
    namespace_directory,
    owner_of,
)
from fastmcp_temporal.server.payloads.payload_sweep import DiskPayloadSweeper
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.server.tasks.starter import ToolOptions
from tests import forks
from tests.helpers import eventually
from tests.ports import free_port
from tests.processes.big_server import blob_text, build
from tests.processes.big_workflows import BigReport, write_report
from tests.processes.running import BIN, Process

MIB = 1024 * 1024
TASK_TIMEOUT_S = 120


async def history_bytes(temporal_client: TemporalClient, task_id: str) -> int:
    """The size of the task's history as Temporal stores it (references, not blobs)."""
    handle = temporal_client.get_workflow_handle(workflow_id_for(task_id, None))
    history = await handle.fetch_history()
    return sum(event.ByteSize() for event in history.events)


async def produce_and_check(mcp: FastMCP, temporal_client: TemporalClient, size: int) -> str:
    async with Client(mcp) as client:
        task = await call_tool_task(client, "produce", {"size": size})
        result = await asyncio.wait_for(task.result(), TASK_TIMEOUT_S)
    assert result.content == [TextContent(type="text", text=blob_text(size))]
    assert await history_bytes(temporal_client, task.task_id) < 256 * 1024
    return task.task_id


async def test_a_3_mib_result_and_argument_on_the_default_disk_store(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """Zero configuration: the blobs land in ``<data dir>/payloads``, keyed by task."""
    tasks = TemporalTasks(address=temporal_server.address, task_queue=task_queue, data_dir=tmp_path)
    mcp = build(tasks)
    task_id = await produce_and_check(mcp, temporal_client, 3 * MIB)
    task_blobs = namespace_directory(tmp_path / "payloads", "default") / workflow_id_for(
        task_id, None
    )
    assert any(path.stat().st_size > 3 * MIB for path in task_blobs.iterdir())

    async with Client(mcp) as client:
        task = await call_tool_task(client, "measure", {"text": blob_text(3 * MIB, seed=1)})
        assert (await asyncio.wait_for(task.result(), TASK_TIMEOUT_S)).data == 3 * MIB
    assert await history_bytes(temporal_client, task.task_id) < 256 * 1024


async def test_a_3_mib_answer_on_the_default_disk_store(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """``tasks/update`` with a 3 MiB answer: the signal and the next leg's input are blobs."""
    tasks = TemporalTasks(address=temporal_server.address, task_queue=task_queue, data_dir=tmp_path)
    big = blob_text(3 * MIB, seed=11)

    async def answer(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return ElicitResult(action="accept", content={"text": big})

    async with Client(build(tasks), elicitation_handler=answer) as client:
        task = await call_tool_task(client, "measure_answer", {})
        assert (await asyncio.wait_for(task.result(), TASK_TIMEOUT_S)).data == 3 * MIB
    assert await history_bytes(temporal_client, task.task_id) < 256 * 1024


async def test_a_history_with_stored_payloads_replays(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """The workflow stays deterministic with references in its history: a replayer
    with the same store rebuilds the task (a leg input and a result from blobs)."""
    tasks = TemporalTasks(address=temporal_server.address, task_queue=task_queue, data_dir=tmp_path)
    mcp = build(tasks)
    async with Client(mcp) as client:
        task = await call_tool_task(client, "measure", {"text": blob_text(3 * MIB, seed=3)})
        assert (await asyncio.wait_for(task.result(), TASK_TIMEOUT_S)).data == 3 * MIB
    handle = temporal_client.get_workflow_handle(workflow_id_for(task.task_id, None))
    history = await handle.fetch_history()
    async with contextlib.AsyncExitStack() as stack:
        storage = await PayloadStoreSettings.resolve(None, data_dir=tmp_path).open(stack)
        replayer = Replayer(workflows=[], plugins=[McpTasksPlugin(mcp, payload_storage=storage)])
        replayed = await replayer.replay_workflow(history)
    assert replayed.replay_failure is None


async def test_a_50_mb_result_on_the_default_disk_store(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    tasks = TemporalTasks(address=temporal_server.address, task_queue=task_queue, data_dir=tmp_path)
    await produce_and_check(build(tasks), temporal_client, 50_000_000)


async def test_big_results_of_local_legs_and_workflow_tools(
    temporal_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    """A local leg's result (a marker in the history) and a workflow tool's activity,
    child-workflow and task results all go through the store too."""
    tasks = TemporalTasks(
        address=temporal_server.address,
        task_queue=task_queue,
        data_dir=tmp_path,
        tools={"produce": ToolOptions(local_legs=True)},
    )
    mcp = build(tasks)
    mcp.add_tool(workflow_tool(BigReport, activities=[write_report]))
    async with Client(mcp) as client:
        local = await call_tool_task(client, "produce", {"size": 3 * MIB})
        local_result = await asyncio.wait_for(local.result(), TASK_TIMEOUT_S)
        assert local_result.content == [TextContent(type="text", text=blob_text(3 * MIB))]
        report = await call_tool_task(client, "big_report", {"size": 3 * MIB})
        report_result = await asyncio.wait_for(report.result(), TASK_TIMEOUT_S)
        assert report_result.data == ("report " * (3 * MIB // 7 + 1))[: 3 * MIB]


async def test_small_payloads_stay_inline(
    temporal_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    tasks = TemporalTasks(address=temporal_server.address, task_queue=task_queue, data_dir=tmp_path)
    async with Client(build(tasks)) as client:
        task = await call_tool_task(client, "produce", {"size": 1000})
        assert (await task.result()).content[0].text == blob_text(1000)  # type: ignore[union-attr]
    assert not (tmp_path / "payloads").exists()


async def test_limits_refuse_big_arguments_and_fail_big_results(
    temporal_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    tasks = TemporalTasks(
        address=temporal_server.address,
        task_queue=task_queue,
        data_dir=tmp_path,
        max_payload_bytes=MIB,
    )
    async with Client(build(tasks)) as client:
        with pytest.raises(MCPError) as refused:
            await call_tool_task(client, "measure", {"text": blob_text(2 * MIB)})
        assert refused.value.error.code == -32602
        assert f"this server's limit is {MIB} bytes" in refused.value.error.message

        task = await call_tool_task(client, "produce", {"size": 2 * MIB}, raise_on_error=False)
        failed = await task.wait(state="failed", timeout=TASK_TIMEOUT_S)
        assert failed.error is not None and failed.error["code"] == -32603
        assert "The tool's result is too large" in failed.error["message"]


async def test_a_front_end_reads_a_big_result_another_process_stored(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """Replicas: the leg runs in a ``fastmcp-temporal worker`` process sharing the store;
    the stateless front end here and ``fastmcp-temporal tasks show`` read its result."""
    store = tmp_path / "shared-payloads"
    command = [str(BIN / "fastmcp-temporal"), "worker", "tests/processes/big_server.py"]
    worker = Process(
        "worker",
        [*command, "--payload-store", str(store)],
        {"TEMPORAL_ADDRESS": temporal_server.address, "BIG_TASK_QUEUE": task_queue},
        tmp_path / "worker.log",
    )
    try:
        await worker.wait_for_output(READY_LINE)
        front_end = TemporalTasks(
            address=temporal_server.address,
            task_queue=task_queue,
            run_worker=False,
            payload_store=str(store),
        )
        task_id = await produce_and_check(build(front_end), temporal_client, 3 * MIB)
    finally:
        worker.stop()
    show = await asyncio.create_subprocess_exec(
        str(BIN / "fastmcp-temporal"),
        "tasks",
        "show",
        workflow_id_for(task_id, None),
        "--address",
        temporal_server.address,
        "--payload-store",
        str(store),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(show.communicate(), 60)
    assert show.returncode == 0, stderr.decode()[-2000:]
    shown = json.loads(stdout)
    assert shown["status"] == "completed"
    assert shown["result"]["content"][0]["text"] == blob_text(3 * MIB)


async def test_the_disk_store_keeps_blobs_inside_and_checks_them(tmp_path: Path) -> None:
    """Workflow ids are any text: they cannot climb out of the store; a changed blob,
    a reference pointing elsewhere and an oversized payload are errors, never data."""
    driver = DiskStorageDriver(tmp_path, max_payload_size=MIB)
    owner = StorageDriverWorkflowInfo(namespace="default", id="../../etc/passwd")
    payload = Payload(metadata={"encoding": b"json/plain"}, data=b'"' + b"x" * 1000 + b'"')
    (claim,) = await driver.store(StorageDriverStoreContext(target=owner), [payload])
    blob = tmp_path / claim.claim_data["path"]
    assert blob.resolve().is_relative_to(tmp_path.resolve()) and blob.is_file()
    assert owner_of(blob.parent) == "../../etc/passwd"
    retrieve = StorageDriverRetrieveContext()
    assert await driver.retrieve(retrieve, [claim]) == [payload]

    blob.write_bytes(blob.read_bytes().replace(b"x", b"y"))
    with pytest.raises(ValueError, match="SHA-256"):
        await driver.retrieve(retrieve, [claim])
    outside = StorageDriverClaim(claim_data={**claim.claim_data, "path": "../elsewhere"})
    with pytest.raises(ValueError, match="outside the store"):
        await driver.retrieve(retrieve, [outside])
    with pytest.raises(ValueError, match="exceeds"):
        await driver.store(StorageDriverStoreContext(target=owner), [Payload(data=b"z" * MIB)])


def test_store_settings_come_from_arguments_then_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STORE_ENV, raising=False)
    default = PayloadStoreSettings.resolve(None, data_dir=tmp_path)
    assert default.disk_root == (tmp_path / "payloads").resolve()
    assert (default.threshold, default.max_payload_bytes) == (256 * 1024, 100 * MIB)
    monkeypatch.setenv(STORE_ENV, f"file://{tmp_path}/elsewhere")
    monkeypatch.setenv("FASTMCP_TEMPORAL_MAX_PAYLOAD_BYTES", "5000000")
    from_env = PayloadStoreSettings.resolve(None, data_dir=tmp_path)
    assert from_env.disk_root == (tmp_path / "elsewhere").resolve()
    assert from_env.max_payload_bytes == 5_000_000
    explicit = PayloadStoreSettings.resolve("s3://bucket", data_dir=tmp_path, max_payload_bytes=7)
    assert (explicit.disk_root, explicit.max_payload_bytes) == (None, 7)
    monkeypatch.setenv("FASTMCP_TEMPORAL_PAYLOAD_THRESHOLD", "lots")
    with pytest.raises(ValueError, match="FASTMCP_TEMPORAL_PAYLOAD_THRESHOLD='lots'"):
        PayloadStoreSettings.resolve(None, data_dir=tmp_path)


# -- S3 (moto in server mode) ---------------------------------------------------------------


@pytest.fixture
def s3_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A real S3-compatible HTTP server (moto), and ``AWS_*`` pointing at it."""
    pytest.importorskip("moto.server", reason="the test extra installs moto[server]")
    port = free_port()
    process = forks.popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None and time.monotonic() < deadline, "moto did not start"
            time.sleep(0.1)
        endpoint = f"http://127.0.0.1:{port}"
        for name, value in {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(name, value)
        yield endpoint
    finally:
        process.terminate()
        process.wait(timeout=10)


async def bucket_objects(bucket: str, create: bool = False) -> dict[str, bytes]:
    """Every object of ``bucket`` (created first if asked), read over the S3 API."""
    import aioboto3

    async with aioboto3.Session().client("s3") as s3:
        if create:
            await s3.create_bucket(Bucket=bucket)
        listing = await s3.list_objects_v2(Bucket=bucket)
        objects: dict[str, bytes] = {}
        for item in listing.get("Contents", []):
            body = (await s3.get_object(Bucket=bucket, Key=item["Key"]))["Body"]
            objects[item["Key"]] = await body.read()
        return objects


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
async def test_a_3_mib_result_and_argument_on_s3(
    encrypted: bool,
    s3_endpoint: str,
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    """The real S3 driver over HTTP; with a key, the bucket holds only ciphertext."""
    bucket = f"task-payloads-{int(encrypted)}"
    await bucket_objects(bucket, create=True)
    key = base64.b64encode(os.urandom(32)).decode() if encrypted else None
    tasks = TemporalTasks(
        address=temporal_server.address,
        task_queue=task_queue,
        payload_store=f"s3://{bucket}",
        encryption_key=key,
    )
    mcp = build(tasks)
    task_id = await produce_and_check(mcp, temporal_client, 3 * MIB)
    argument = blob_text(3 * MIB, seed=7)
    async with Client(mcp) as client:
        task = await call_tool_task(client, "measure", {"text": argument})
        assert (await asyncio.wait_for(task.result(), TASK_TIMEOUT_S)).data == 3 * MIB
    objects = await bucket_objects(bucket)
    for owner in (task_id, task.task_id):
        keyed = [
            len(data) for name, data in objects.items() if workflow_id_for(owner, None) in name
        ]
        assert keyed and max(keyed) > 3 * MIB, f"no blob of task {owner} in {sorted(objects)}"
    samples = [blob_text(3 * MIB)[1000:1064].encode(), argument[1000:1064].encode()]
    in_clear = [any(sample in data for data in objects.values()) for sample in samples]
    assert in_clear == [not encrypted] * 2, "plaintext exactly when no key is set"


# -- lifetime ---------------------------------------------------------------------------------


@pytest.fixture
async def finished_task(
    temporal_server: DevServer, task_queue: str, tmp_path: Path
) -> AsyncIterator[str]:
    tasks = TemporalTasks(address=temporal_server.address, task_queue=task_queue, data_dir=tmp_path)
    async with Client(build(tasks)) as client:
        task = await call_tool_task(client, "produce", {"size": MIB})
        await task.result()
    yield workflow_id_for(task.task_id, None)


async def test_the_sweep_deletes_blobs_of_purged_and_never_started_tasks_only(
    finished_task: str, temporal_client: TemporalClient, tmp_path: Path
) -> None:
    root = tmp_path / "payloads"
    namespace = namespace_directory(root, "default")
    live = namespace / finished_task
    gone = namespace / "mcp-anon-purged0000000000000000000000"
    young = namespace / "mcp-anon-starting00000000000000000000"
    for folder in (gone, young):
        folder.mkdir()
        (folder / ("0" * 64)).write_bytes(b"blob")
    interrupted = live / ".abc.tmp"
    interrupted.write_bytes(b"half a blob")
    two_hours_ago = time.time() - 7200
    for path in (*live.iterdir(), live, *gone.iterdir(), gone):
        os.utime(path, (two_hours_ago, two_hours_ago))

    sweeper = DiskPayloadSweeper(root, temporal_client, grace=timedelta(hours=1))
    assert await sweeper.sweep() == 1
    assert not gone.exists(), "no such workflow (purged, or its start crashed): deleted"
    assert young.exists(), "a young directory may be a start in flight: kept"
    assert live.exists() and any(live.iterdir()), "the task still exists: its blobs stay"
    assert not interrupted.exists(), "an old temporary file is an interrupted write"


async def test_a_worker_sweeps_without_being_asked(
    temporal_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    """The extension's worker sweeps when it starts (then every 15 minutes)."""
    orphan = namespace_directory(tmp_path / "payloads", "default") / "mcp-anon-crashed-start"
    orphan.mkdir(parents=True)
    (orphan / ("0" * 64)).write_bytes(b"an argument whose start never happened")
    two_hours_ago = time.time() - 7200
    for path in (*orphan.iterdir(), orphan):
        os.utime(path, (two_hours_ago, two_hours_ago))
    tasks = TemporalTasks(address=temporal_server.address, task_queue=task_queue, data_dir=tmp_path)
    async with Client(build(tasks)):
        await eventually(lambda: not orphan.exists(), timeout=30)
