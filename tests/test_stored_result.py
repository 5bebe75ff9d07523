"""A big result is stored once (by the leg, by reference) and read back as it was.

Real parts: the session's Temporal dev server, FastMCP clients over the
in-memory transport, the disk store in a temporary data dir. Before
``RESULT_STORED_ONCE`` a big result was two blobs (the leg's outcome and the
workflow's result); tasks finished like that are still read from the
workflow's result (last test).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastmcp import Client
from mcp_types import TextContent
from temporalio import workflow
from temporalio.client import Client as TemporalClient
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.core.codec import task_data_converter
from fastmcp_temporal.server.payloads.payload_store import PayloadStoreSettings, namespace_directory
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.server.tasks.starter import ToolOptions
from fastmcp_temporal.server.tasks.task_records import TaskRecords
from fastmcp_temporal.workflows.models import TaskView
from fastmcp_temporal.workflows.task_workflow import MEMO_KEY
from tests.processes.big_server import blob_text, build

MIB = 1024 * 1024
TASK_TIMEOUT_S = 120


def task_blobs(data_dir: Path, task_id: str) -> list[Path]:
    """The finished blobs of one task in the default disk store (no temporary files)."""
    folder = namespace_directory(data_dir / "payloads", "default") / workflow_id_for(task_id, None)
    return [path for path in folder.iterdir() if not path.name.startswith(".")]


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
async def test_a_big_result_is_one_blob_read_back_byte_identical(
    encrypted: bool,
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    key = base64.b64encode(os.urandom(32)).decode() if encrypted else None
    tasks = TemporalTasks(
        address=temporal_server.address,
        task_queue=task_queue,
        data_dir=tmp_path,
        encryption_key=key,
    )
    expected = blob_text(3 * MIB)
    async with Client(build(tasks)) as client:
        task = await call_tool_task(client, "produce", {"size": 3 * MIB})
        result = await asyncio.wait_for(task.result(), TASK_TIMEOUT_S)
        finished = await task.status()
    assert result.content == [TextContent(type="text", text=expected)]
    assert finished.status == "completed"
    assert (finished.result or {})["content"] == [{"type": "text", "text": expected}]

    (blob,) = task_blobs(tmp_path, task.task_id)  # the leg's outcome and the task's result share it
    stored = blob.read_bytes()
    assert 3 * MIB < len(stored) < 3 * MIB + 4096
    assert (expected[1000:1064].encode() in stored) is not encrypted, "plaintext only without a key"

    # The finished view is small enough for the memo: it carries the reference, not the result.
    handle = temporal_client.get_workflow_handle(workflow_id_for(task.task_id, None))
    memo = (await handle.describe()).raw_description.workflow_execution_info.memo.fields[MEMO_KEY]
    assert memo.ByteSize() < 16 * 1024


async def test_a_local_legs_big_result_is_one_blob_too(
    temporal_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    """A local leg's outcome is a marker in the history, not an activity result: same rule."""
    tasks = TemporalTasks(
        address=temporal_server.address,
        task_queue=task_queue,
        data_dir=tmp_path,
        tools={"produce": ToolOptions(local_legs=True)},
    )
    async with Client(build(tasks)) as client:
        task = await call_tool_task(client, "produce", {"size": 3 * MIB})
        result = await asyncio.wait_for(task.result(), TASK_TIMEOUT_S)
    assert result.content == [TextContent(type="text", text=blob_text(3 * MIB))]
    assert len(task_blobs(tmp_path, task.task_id)) == 1


async def test_update_and_cancel_of_a_finished_big_task_do_not_read_its_result(
    temporal_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    """They only check that the task has not expired: with its blob gone, both still ack."""
    tasks = TemporalTasks(address=temporal_server.address, task_queue=task_queue, data_dir=tmp_path)
    async with Client(build(tasks)) as client:
        task = await call_tool_task(client, "produce", {"size": MIB})
        await asyncio.wait_for(task.result(), TASK_TIMEOUT_S)
        for blob in task_blobs(tmp_path, task.task_id):
            blob.unlink()
        await task.cancel()
        await task.answer({"1.nothing": {"action": "cancel"}})


@workflow.defn(name="ResultInlineBeforeStoredOnce")
class ResultInline:
    """What a task finished before ``RESULT_STORED_ONCE`` returns: the result inside the view."""

    @workflow.run
    async def run(self, view: TaskView) -> TaskView:
        workflow.upsert_memo({MEMO_KEY: view.model_dump(mode="json", exclude={"result"})})
        return view.model_copy(update={"status": "completed"})


async def test_a_big_result_finished_before_the_change_is_read_from_the_workflow_result(
    temporal_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        storage = await PayloadStoreSettings.resolve(None, data_dir=tmp_path).open(stack)
        client = await TemporalClient.connect(
            temporal_server.address, data_converter=task_data_converter(payload_storage=storage)
        )
        worker = Worker(
            client,
            task_queue=task_queue,
            workflows=[ResultInline],
            workflow_runner=UnsandboxedWorkflowRunner(),  # the test module imports the MCP stack
        )
        await stack.enter_async_context(worker)
        text = blob_text(3 * MIB, seed=9)
        now = datetime.now(UTC)
        view = TaskView(
            task_id="t-old-shape",
            status="working",
            created_at=now,
            last_updated_at=now,
            ttl_ms=3_600_000,
            poll_interval_ms=1000,
            result={"content": [{"type": "text", "text": text}], "isError": False},
        )
        handle = await client.start_workflow(
            ResultInline.run,
            view,
            id=workflow_id_for(view.task_id, None),
            task_queue=task_queue,
            result_type=TaskView,
        )
        await handle.result()
        records = TaskRecords(client, ttl_ms=3_600_000, query_timeout=timedelta(seconds=30))
        description = await records.describe(view.task_id, handle.id)
        got = await records.closed_view(view.task_id, handle, description.status, description)
    assert got.status == "completed"
    assert got.result == view.result
    assert len(list((tmp_path / "payloads").rglob("*"))) > 1  # the inline result was stored too
