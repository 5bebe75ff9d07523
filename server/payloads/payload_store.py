"""Big payloads past Temporal's 2 MB limit: temporalio's external storage, configured.

```python
TemporalTasks()                                        # <data dir>/payloads on local disk
TemporalTasks(payload_store="s3://my-task-payloads")   # S3 (the `s3` extra; AWS_* settings)
TemporalTasks(payload_store=GCSStorageDriver(...))     # any temporalio StorageDriver
```

Temporal refuses any payload of 2 MB or more, but a tool's arguments, the
answers it gets and its result are routinely bigger (a fetched document, an
image as base64, a CSV). temporalio's ``ExternalStorage`` moves every payload
at or above ``payload_size_threshold`` to a *driver* after the codec ran (so an
encrypted task stores ciphertext) and writes only a small reference into the
history; every client and worker that reads the task resolves it through the
same driver. Smaller payloads stay inline: no extra round trip for the common
case (the threshold is measured in ``bench/investigations/2026-11-30-payload-threshold``).

The store is chosen by ``payload_store`` or ``$FASTMCP_TEMPORAL_PAYLOAD_STORE``:

* a path or ``file:///path`` (default ``<data dir>/payloads``): ``DiskStorageDriver``.
  Every process of a deployment must see the same directory (one host, or a
  shared volume); blobs of purged tasks are removed by ``payload_sweep``. On a
  configured Temporal address with nothing chosen, each process says once at
  start-up where big payloads go and how to choose (``announce_local_default``).
* ``s3://bucket``: temporalio's ``S3StorageDriver`` over aioboto3. Endpoint,
  region and credentials come from the usual ``AWS_*`` variables
  (``AWS_ENDPOINT_URL`` for MinIO); expiry is the bucket's lifecycle rule.

``max_payload_bytes`` (default 100 MB, ``$FASTMCP_TEMPORAL_MAX_PAYLOAD_BYTES``)
is the ceiling for one payload: arguments and answers above it are refused with
``-32602``, a result above it fails its task.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import (
    ExternalStorage,
    StorageDriver,
    StorageDriverActivityInfo,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
    StorageDriverWorkflowInfo,
)

from fastmcp_temporal.server.core.settings import (
    DEFAULT_PAYLOAD_THRESHOLD,
    env_var,
    load_settings,
)
from fastmcp_temporal.workflows.models import DEFAULT_MAX_PAYLOAD_BYTES

logger = logging.getLogger(__name__)

STORE_ENV = env_var("payload_store")
#: What the codec and the payload envelope add around a value we measured.
_ENVELOPE_MARGIN = 1024 * 1024
#: The directory of blobs stored without a workflow (no task owns them).
UNSCOPED = "_unscoped"
DISK_DRIVER_NAME = "fastmcp-temporal.disk"


def _segment(value: str | None) -> str:
    """A path segment that round-trips through ``unquote`` and never means ``.``/``..``."""
    if not value:
        return UNSCOPED
    return quote(value, safe="").replace(".", "%2E")


class DiskStorageDriver(StorageDriver):
    """Payload blobs in a local directory: ``<root>/<namespace>/<workflow id>/<sha256>``.

    Keyed by task (the workflow id is the task's), content-addressed within
    it, so a retried leg that returns the same bytes writes nothing new and a
    sweep can delete a finished task's blobs as one directory. A blob is
    written to a temporary file, fsync'd, renamed into place and its directory
    fsync'd: a reference Temporal recorded never points to a torn file. Reads
    check the SHA-256 the reference carries.
    """

    def __init__(self, root: str | Path, *, max_payload_size: int) -> None:
        self.root = Path(root).resolve()
        self._max_payload_size = max_payload_size

    def name(self) -> str:
        return DISK_DRIVER_NAME

    def type(self) -> str:
        return "fastmcp_temporal.disk"

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        target = context.target
        namespace = target.namespace if target is not None else None
        owner: str | None = None
        if isinstance(target, StorageDriverWorkflowInfo | StorageDriverActivityInfo):
            owner = target.id
        directory = f"{_segment(namespace)}/{_segment(owner)}"
        return [await asyncio.to_thread(self._write, directory, p) for p in payloads]

    def _write(self, directory: str, payload: Payload) -> StorageDriverClaim:
        data = payload.SerializeToString()
        if len(data) > self._max_payload_size:
            raise ValueError(
                f"Payload of {len(data)} bytes exceeds the store's limit of "
                f"{self._max_payload_size} bytes"
            )
        digest = hashlib.sha256(data).hexdigest()
        folder = self.root / directory
        final = folder / digest
        if not final.exists():
            folder.mkdir(parents=True, exist_ok=True)
            temporary = folder / f".{digest}.{uuid.uuid4().hex}.tmp"
            with open(temporary, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, final)
            _fsync_directory(folder)
        else:
            final.touch()  # still in use: the sweep's age counts from the last write
        return StorageDriverClaim(claim_data={"path": f"{directory}/{digest}", "sha256": digest})

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        return [await asyncio.to_thread(self._read, claim) for claim in claims]

    def _read(self, claim: StorageDriverClaim) -> Payload:
        relative = claim.claim_data.get("path", "")
        path = (self.root / relative).resolve()
        if not path.is_relative_to(self.root):
            raise ValueError(f"Payload reference {relative!r} points outside the store")
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(missing_blob_message(relative, self.root)) from None
        if hashlib.sha256(data).hexdigest() != claim.claim_data.get("sha256"):
            raise ValueError(f"Payload blob {relative!r} failed its SHA-256 check")
        return Payload.FromString(data)


def _fsync_directory(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def owner_of(directory: Path) -> str | None:
    """The workflow id a task's blob directory belongs to (``None``: unscoped)."""
    return None if directory.name == UNSCOPED else unquote(directory.name)


def namespace_directory(root: Path, namespace: str) -> Path:
    return root / _segment(namespace)


#: How to choose one store for a whole deployment (in the messages below).
_CHOOSE_A_STORE = (
    f"set ${STORE_ENV} (or payload_store=, or --payload-store) to s3://<bucket> "
    "or a directory every process shares"
)


def missing_blob_message(relative: str, root: Path) -> str:
    return (
        f"Payload blob {relative!r} is missing from {root}: a process that does not share "
        "this directory stored it, or its task was purged. Every front end and worker "
        f"must use one payload store: {_CHOOSE_A_STORE}"
    )


def local_default_notice(root: Path, threshold: int) -> str:
    """The start-up line of a process on a configured Temporal with the default disk store."""
    return (
        f"fastmcp-temporal: payloads of {threshold} bytes or more go to the local directory "
        f"{root} (no payload store configured); front ends and workers on other hosts will "
        f"not find them: {_CHOOSE_A_STORE}"
    )


#: Disk stores this process has logged ``local_default_notice`` for.
_announced_roots: set[Path] = set()


@dataclass(frozen=True)
class PayloadStoreSettings:
    """Where big payloads go and how big they may be; ``resolve`` reads the environment."""

    store: str | StorageDriver
    threshold: int = DEFAULT_PAYLOAD_THRESHOLD
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES
    #: Nothing chose the store: it is the data directory's ``payloads/`` on local disk.
    defaulted: bool = False

    @classmethod
    def resolve(
        cls,
        store: str | StorageDriver | None,
        *,
        data_dir: Path,
        threshold: int | None = None,
        max_payload_bytes: int | None = None,
    ) -> PayloadStoreSettings:
        """Arguments first, then ``$FASTMCP_TEMPORAL_PAYLOAD_*``, then the defaults."""
        configured = load_settings()
        chosen = store if store is not None else configured.payload_store
        settings = cls(
            store=chosen if chosen is not None else str(data_dir / "payloads"),
            defaulted=chosen is None,
            threshold=configured.payload_threshold if threshold is None else threshold,
            max_payload_bytes=(
                configured.max_payload_bytes if max_payload_bytes is None else max_payload_bytes
            ),
        )
        if settings.threshold < 0 or settings.max_payload_bytes <= 0:
            raise ValueError("payload threshold must be >= 0 and max_payload_bytes > 0")
        return settings

    @property
    def disk_root(self) -> Path | None:
        """The directory of the disk store, or ``None`` for another store."""
        if not isinstance(self.store, str) or self.store.startswith("s3://"):
            return None
        parsed = urlparse(self.store)
        return Path(unquote(parsed.path) if parsed.scheme == "file" else self.store).resolve()

    def announce_local_default(self) -> None:
        """On a configured Temporal: say once where big payloads go if nobody chose.

        The default store is right for the embedded server (one host, one data
        directory) and silently wrong for a cluster with workers elsewhere: a
        blob one host wrote is missing on another, found only when the first
        big payload shows up. One line at start-up says so before that happens.
        """
        root = self.disk_root
        if not self.defaulted or root is None or root in _announced_roots:
            return
        _announced_roots.add(root)
        logger.warning(local_default_notice(root, self.threshold))

    async def open(self, stack: contextlib.AsyncExitStack) -> ExternalStorage:
        """The ``ExternalStorage`` for these settings; an S3 client closes with ``stack``."""
        driver_limit = self.max_payload_bytes + _ENVELOPE_MARGIN
        if isinstance(self.store, StorageDriver):
            driver: StorageDriver = self.store
        elif self.store.startswith("s3://"):
            driver = await _open_s3(self.store, stack, driver_limit)
        else:
            root = self.disk_root
            assert root is not None
            driver = DiskStorageDriver(root, max_payload_size=driver_limit)
        return ExternalStorage(drivers=[driver], payload_size_threshold=self.threshold)


async def _open_s3(url: str, stack: contextlib.AsyncExitStack, limit: int) -> StorageDriver:
    """temporalio's S3 driver on an aioboto3 client configured by ``AWS_*`` variables."""
    try:
        import aioboto3
        from temporalio.contrib.aws.s3driver import S3StorageDriver
        from temporalio.contrib.aws.s3driver.aioboto3 import new_aioboto3_client
    except ImportError:
        raise RuntimeError(
            f"payload store {url!r} needs the S3 driver: pip install 'fastmcp-temporal[s3]'"
        ) from None
    bucket = urlparse(url).netloc
    if not bucket:
        raise ValueError(f"payload store {url!r}: expected s3://<bucket>")
    s3 = await stack.enter_async_context(aioboto3.Session().client("s3"))
    return S3StorageDriver(client=new_aioboto3_client(s3), bucket=bucket, max_payload_size=limit)


def with_payload_storage(client: Client, storage: ExternalStorage) -> Client:
    """``client`` itself if it has external storage, else a twin (same connection) with ``storage``.

    Without one, a result stored by a worker could not be read back: every
    process of a deployment must resolve the same references.
    """
    converter = client.data_converter
    if converter.external_storage is not None:
        return client
    config = client.config(active_config=True)
    config["data_converter"] = dataclasses.replace(converter, external_storage=storage)
    config["plugins"] = []  # already applied: their interceptors are in the active config
    return Client(**config)


def add_argument(parser: argparse.ArgumentParser) -> None:
    """``--payload-store`` for the commands that read or write task payloads."""
    parser.add_argument(
        "--payload-store",
        help=f"directory or s3://bucket of payloads past the threshold (${STORE_ENV}; "
        "default: the data dir's payloads/)",
    )
