"""Generation 3: the paths recorded with ``result-stored-once``, in ``tests/histories/v3/``.

The patch ``fastmcp-temporal/result-stored-once`` (``workflows/task_workflow.py``) records a
marker before a run's first leg and asks each leg to store a big result itself,
by reference (``StoredResult``): the leg's outcome and the workflow's result
carry the reference, and the result is one blob instead of two. Tasks started
from then on take this branch, so every path of generation 2 is recorded once
more here; ``stored_payloads`` now has a stored result (and its own blobs).
"""

from __future__ import annotations

import shutil
from dataclasses import replace

from tests.histories.harness import Harness, Run, TaskPath, text, wid
from tests.histories.paths_v2 import SECOND_GENERATION, STORED_PAYLOADS_THRESHOLD, V2
from tests.histories.replay import HISTORIES

V3 = "v3"
#: The disk store the ``v3/stored_payloads`` history refers to (committed blobs).
STORED_PAYLOADS_STORE_V3 = f"{V3}/stored_payloads.blobs"


def _on_v3(path: TaskPath) -> TaskPath:
    """A generation-2 path driven again, its files under ``v3/``."""

    def moved(file: str) -> str:
        return f"{V3}/{file.removeprefix(f'{V2}/')}"

    async def drive(harness: Harness) -> dict[str, Run]:
        return {moved(file): run for file, run in (await path.drive(harness)).items()}

    files = tuple(moved(file) for file in path.files)
    return replace(path, name=moved(path.name), drive=drive, files=files)


async def stored_payloads(harness: Harness) -> dict[str, Run]:
    """An argument and a result above the store's threshold; the result is stored once.

    The argument is two blobs (the workflow's input and the leg's input); the
    result is one, written by the leg, which the leg outcome and the workflow
    result refer to (generation 2: two blobs, one per payload).
    """
    store = HISTORIES / STORED_PAYLOADS_STORE_V3
    shutil.rmtree(store, ignore_errors=True)
    big = "abcdefgh" * 256  # 2 KiB: past the threshold, a few KiB of blobs

    async def mirror(words: str) -> str:
        return words[::-1]

    extension = harness.tasks(payload_store=str(store), payload_threshold=STORED_PAYLOADS_THRESHOLD)
    async with harness.serve(extension, mirror) as wire:
        task = await wire.start("mirror", {"words": big})
        assert text(await wire.wait_status(task, "completed")) == big[::-1]
    blobs = [path for path in store.rglob("*") if path.is_file()]
    assert len(blobs) == 3, f"argument twice, result once: {blobs}"
    return {f"{V3}/stored_payloads": Run(wid(task))}


THIRD_GENERATION: tuple[TaskPath, ...] = (
    *(_on_v3(path) for path in SECOND_GENERATION if path.name != f"{V2}/stored_payloads"),
    TaskPath(
        f"{V3}/stored_payloads",
        stored_payloads,
        (f"{V3}/stored_payloads",),
        payload_store=STORED_PAYLOADS_STORE_V3,
    ),
)
