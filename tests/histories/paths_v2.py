"""Generation 2: the paths recorded on the patched workflow code, in ``tests/histories/v2/``.

Two patches changed the commands a new task issues:
``fastmcp-temporal/legs-retry-until-deadline`` (``workflows/leg_retry.py``: a
marker at each run's first leg, legs retry until the task's TTL) and
``fastmcp-temporal/progress-in-memo`` (``workflows/tool_helpers.py``: a
workflow tool's ``report_progress`` upserts its own memo instead of signalling
the task). Tasks started from then on take these branches, so every path of
generation 1 is recorded once more here (``ttl_running`` ends differently now,
see ``ttl_running`` below), plus the paths only the new code has: a drained leg
handed back, a leg nobody can decrypt until the TTL, and payloads in the store.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import replace
from datetime import timedelta

from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowExecutionStatus

from fastmcp_temporal import LegPolicy
from fastmcp_temporal.server.core.codec import task_data_converter
from fastmcp_temporal.server.tasks.starter import ToolOptions
from tests.histories.harness import Drive, Harness, Run, TaskPath, new_queue, text, wid
from tests.histories.paths import FIRST_GENERATION
from tests.histories.replay import HISTORIES

V2 = "v2"
#: A key that is not ``TEST_ENCRYPTION_KEY``: the worker holding it cannot read the task.
OTHER_ENCRYPTION_KEY = "elsewhere:" + "a7" * 32
#: The disk store the ``stored_payloads`` history refers to (committed blobs).
STORED_PAYLOADS_STORE = f"{V2}/stored_payloads.blobs"
#: Payloads at least this big go to the store; small, so the committed blobs stay tiny.
STORED_PAYLOADS_THRESHOLD = 1024


def _on_v2(path: TaskPath) -> TaskPath:
    """``path`` driven again, its files under ``v2/``."""

    async def drive(harness: Harness) -> dict[str, Run]:
        return {f"{V2}/{file}": run for file, run in (await path.drive(harness)).items()}

    files = tuple(f"{V2}/{file}" for file in path.files)
    return replace(path, name=f"{V2}/{path.name}", drive=drive, files=files)


async def ttl_running(harness: Harness) -> dict[str, Run]:
    """Still running at its TTL (1 s): the leg's deadline fails the task with -32000 at
    the TTL (generation 1: Temporal timed the workflow out a minute later)."""

    async def endless() -> str:
        await asyncio.sleep(3600)
        return "never"

    extension = harness.tasks(tools={"endless": ToolOptions(ttl_ms=1000)})
    async with harness.serve(extension, endless) as wire:
        task = await wire.start("endless")
        failed = await wire.wait_status(task, "failed")
        assert failed["error"]["code"] == -32000
        assert "did not finish within the task's TTL" in failed["error"]["message"]
        assert await harness.wait_closed(wid(task), 30) == WorkflowExecutionStatus.FAILED
    return {f"{V2}/ttl_running": Run(wid(task))}


async def drained_leg_handed_back(harness: Harness) -> dict[str, Run]:
    """A worker drains mid-leg: the leg is handed back and succeeds on the next worker.

    Two servers on one queue, one after the other (a process runs one worker per
    queue): the first shuts down while the leg runs on it (its worker drains:
    0.2 s of grace, then the leg is cancelled and hands itself back), the
    second runs the leg again.
    """
    queue = new_queue()
    running = asyncio.Event()
    attempts: list[int] = []

    async def handed_over() -> str:
        attempts.append(len(attempts) + 1)
        if len(attempts) == 1:
            running.set()
            await asyncio.sleep(3600)
        return "finished on the next worker"

    draining = harness.tasks(
        task_queue=queue, worker_options={"graceful_shutdown_timeout": timedelta(seconds=0.2)}
    )
    async with harness.serve(draining, handed_over) as wire:
        task = await wire.start("handed_over")
        await asyncio.wait_for(running.wait(), 60)
    async with harness.serve(harness.tasks(task_queue=queue), handed_over) as wire:
        assert text(await wire.wait_status(task, "completed")) == "finished on the next worker"
    assert attempts == [1, 2]
    return {f"{V2}/drained_leg_handed_back": Run(wid(task))}


async def leg_key_missing_until_ttl(harness: Harness) -> dict[str, Run]:
    """The legs' only worker lacks the task's key: its attempts fail until the TTL (3 s),
    which fails the task with -32000 naming the decryption failure."""
    legs = new_queue()
    wrong = TemporalClient(
        harness.client.service_client,
        namespace=harness.client.namespace,
        data_converter=task_data_converter(OTHER_ENCRYPTION_KEY),
    )

    async def echo(said: str) -> str:
        raise AssertionError("a leg ran without its payloads")

    creator = harness.tasks(encrypted=True, ttl_ms=3000, leg_policy=LegPolicy(task_queue=legs))
    async with (
        harness.serve(creator, echo) as wire,
        harness.serve(harness.tasks(client=wrong, task_queue=legs), echo),
    ):
        task = await wire.start("echo", {"said": "secret"})
        failed = await wire.wait_status(task, "failed")
    message = failed["error"]["message"]
    assert failed["error"]["code"] == -32000, failed
    assert "last failure: Cannot decrypt a task payload" in message, message
    return {f"{V2}/leg_key_missing_until_ttl": Run(wid(task))}


async def stored_payloads(harness: Harness) -> dict[str, Run]:
    """An argument and a result above the store's threshold: the history holds references.

    The blobs go to ``STORED_PAYLOADS_STORE``, emptied first: a replay reads them there.
    """
    store = HISTORIES / STORED_PAYLOADS_STORE
    shutil.rmtree(store, ignore_errors=True)
    big = "abcdefgh" * 256  # 2 KiB: past the threshold, a few KiB of blobs

    async def mirror(words: str) -> str:
        return words[::-1]

    extension = harness.tasks(payload_store=str(store), payload_threshold=STORED_PAYLOADS_THRESHOLD)
    async with harness.serve(extension, mirror) as wire:
        task = await wire.start("mirror", {"words": big})
        assert text(await wire.wait_status(task, "completed")) == big[::-1]
    assert any(store.rglob("*")), "nothing was stored"
    return {f"{V2}/stored_payloads": Run(wid(task))}


def _v2(
    name: str, drive: Drive, *, encrypted: bool = False, payload_store: str | None = None
) -> TaskPath:
    """A path only the patched code takes: one file, ``v2/<name>``."""
    return TaskPath(f"{V2}/{name}", drive, (f"{V2}/{name}",), encrypted, payload_store)


SECOND_GENERATION: tuple[TaskPath, ...] = (
    *(_on_v2(path) for path in FIRST_GENERATION if path.name != "ttl_running"),
    _v2("ttl_running", ttl_running),
    _v2("drained_leg_handed_back", drained_leg_handed_back),
    _v2("leg_key_missing_until_ttl", leg_key_missing_until_ttl, encrypted=True),
    _v2("stored_payloads", stored_payloads, payload_store=STORED_PAYLOADS_STORE),
)
