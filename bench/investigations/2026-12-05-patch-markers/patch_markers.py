"""What a patch costs a fresh workflow, and which histories which code replays.

Raw ``temporalio`` only: one workflow type ``W`` (an activity after a patch call),
written four ways -- ``workflow.patched("p1")`` (``Patched``), no call at all
(``Unpatched``), ``workflow.deprecate_patch("p1")`` (``Deprecated``), and the call
made only while replaying (``Folded``: ``workflows/patches.py``'s way for a patch a
task's level folds in) -- each run once on a fresh in-memory dev server, its
events printed; then every history is replayed by every version of the code.
Results: ``results.md`` beside this file.

    .venv/bin/python bench/investigations/2026-12-05-patch-markers/patch_markers.py
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer, Worker

from fastmcp_temporal.server.embedded import devserver


@activity.defn
async def echo(text: str) -> str:
    return text


async def _leg(flag: bool) -> str:
    return await workflow.execute_activity(
        echo, str(flag), start_to_close_timeout=timedelta(seconds=5)
    )


@workflow.defn(name="W", sandboxed=False)
class Patched:
    @workflow.run
    async def run(self) -> str:
        return await _leg(workflow.patched("p1"))


@workflow.defn(name="W", sandboxed=False)
class Unpatched:
    @workflow.run
    async def run(self) -> str:
        return await _leg(True)


@workflow.defn(name="W", sandboxed=False)
class Deprecated:
    @workflow.run
    async def run(self) -> str:
        workflow.deprecate_patch("p1")
        return await _leg(True)


@workflow.defn(name="W", sandboxed=False)
class Folded:
    @workflow.run
    async def run(self) -> str:
        if workflow.unsafe.is_replaying():
            workflow.patched("p1")
        return await _leg(True)


VERSIONS = (Patched, Unpatched, Deprecated, Folded)


async def record(client: Client, code: type) -> WorkflowHistory:
    queue = f"q-{code.__name__}"
    async with Worker(client, task_queue=queue, workflows=[code], activities=[echo]):
        handle = await client.start_workflow("W", id=f"w-{code.__name__}", task_queue=queue)
        await handle.result()
        history = await handle.fetch_history()
    kinds = [EventType.Name(e.event_type).removeprefix("EVENT_TYPE_") for e in history.events]
    print(f"| {code.__name__} | {len(kinds)} | {', '.join(kinds[3:-4])} |")
    return history


async def main() -> None:
    port = devserver.free_port()
    args = devserver.start_dev_command(
        Path(tempfile.mkdtemp()), port=port, ui_port=None, in_memory=True, search_attributes=False
    )
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                client = await Client.connect(f"127.0.0.1:{port}")
                break
            except RuntimeError:
                await asyncio.sleep(0.2)
        print("| code | events | from the first workflow task's completion to the activity's |")
        print("|---|---|---|")
        histories = {code.__name__: await record(client, code) for code in VERSIONS}
        print()
        print(
            "| history recorded by | " + " | ".join(f"replayed by {c.__name__}" for c in VERSIONS)
        )
        print("|---" * (len(VERSIONS) + 1) + "|")
        for recorded, history in histories.items():
            cells = []
            for code in VERSIONS:
                result = await Replayer(workflows=[code]).replay_workflow(
                    history, raise_on_replay_failure=False
                )
                failure = result.replay_failure
                cells.append("ok" if failure is None else f"fails: {str(failure)[:90]}")
            print(f"| {recorded} | " + " | ".join(cells) + " |")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    asyncio.run(main())
