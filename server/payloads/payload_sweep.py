"""Deleting the disk store's blobs of tasks Temporal has purged, with nobody asking.

A task's blobs live in ``<store>/<namespace>/<workflow id>/`` and are needed as
long as Temporal keeps the task's history: until its retention period after it
closed (``tasks/get``, the Web UI and replays read them). So the sweep asks
Temporal: a directory whose workflow no longer exists is deleted. Its age is
checked first (the newest file older than ``grace``), because a front end writes
a big argument *before* it starts the workflow: a young directory without a
workflow is a start in flight, an old one is the leftover of a start that
crashed in between, and goes too. Stray temporary files of interrupted writes
are removed after the same grace.

Every process that runs a worker on the disk store sweeps its namespace every
``interval``; two sweepers deleting the same directory is harmless.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client
from temporalio.converter import ExternalStorage

from fastmcp_temporal.server.core import background
from fastmcp_temporal.server.payloads.payload_store import (
    UNSCOPED,
    PayloadStoreSettings,
    namespace_directory,
    owner_of,
)
from fastmcp_temporal.server.tasks.task_records import describe_raw

logger = logging.getLogger(__name__)

DEFAULT_GRACE = timedelta(hours=1)
DEFAULT_INTERVAL = timedelta(minutes=15)


class DiskPayloadSweeper:
    """Removes the blob directories of workflows that no longer exist."""

    def __init__(self, root: Path, client: Client, *, grace: timedelta = DEFAULT_GRACE) -> None:
        self.directory = namespace_directory(root, client.namespace)
        self.client = client
        self.grace = grace

    async def sweep(self) -> int:
        """One pass; returns how many task directories it deleted."""
        if not self.directory.is_dir():
            return 0
        cutoff = time.time() - self.grace.total_seconds()
        deleted = 0
        for folder in await asyncio.to_thread(lambda: list(self.directory.iterdir())):
            if not folder.is_dir():
                continue
            newest = await asyncio.to_thread(_newest_mtime, folder, cutoff)
            if newest >= cutoff:
                continue
            owner = owner_of(folder)
            if owner is not None and await self._exists(owner):
                continue
            if owner is None and folder.name == UNSCOPED:
                continue  # no task owns these; only their temporary files go
            await asyncio.to_thread(shutil.rmtree, folder, True)
            deleted += 1
        return deleted

    async def _exists(self, workflow_id: str) -> bool:
        return await describe_raw(self.client, workflow_id) is not None

    @contextlib.asynccontextmanager
    async def running(self, interval: timedelta = DEFAULT_INTERVAL) -> AsyncIterator[None]:
        """Sweep now and every ``interval`` while the context is open."""

        async def forever() -> None:
            while True:
                try:
                    deleted = await self.sweep()
                    if deleted:
                        logger.info("payload sweep: deleted %d purged task(s)' blobs", deleted)
                except Exception:  # a Temporal outage must not end the sweeping
                    logger.warning("payload sweep failed; retrying later", exc_info=True)
                await asyncio.sleep(interval.total_seconds())

        async with background.running(forever()):
            yield


@contextlib.asynccontextmanager
async def sweeping(
    settings: PayloadStoreSettings, storage: ExternalStorage, client: Client
) -> AsyncIterator[None]:
    """A worker's sweep of ``client``'s namespace, if its store is this disk store."""
    root = settings.disk_root
    if root is None or client.data_converter.external_storage is not storage:
        yield  # another store (its lifecycle rules expire it), or the client's own
        return
    async with DiskPayloadSweeper(root, client).running():
        yield


def _newest_mtime(folder: Path, cutoff: float) -> float:
    """The newest modification time in ``folder``; old temporary files are removed."""
    newest = 0.0
    for entry in folder.iterdir():
        modified = entry.stat().st_mtime
        if entry.name.endswith(".tmp") and modified < cutoff:
            entry.unlink(missing_ok=True)  # an interrupted write's leftover
            continue
        newest = max(newest, modified)
    return newest
