"""A big result, written to the payload store once and read back once.

Left to temporalio's ``ExternalStorage``, a 50 MB result would be stored twice:
the leg's outcome is one payload (a blob), and the workflow's result -- the
task's final view, which contains the result again -- is another (a second
blob, never the same bytes: another envelope, and with encryption another
nonce). So the leg stores the result *itself*, as its own payload, through the
same codec and driver the SDK would use, and hands the workflow a
``StoredResult`` (driver name + claim): the leg outcome and the final view
both carry that reference, a few hundred bytes, inline in the history and in
the memo. ``tasks/get`` then reads the blob directly: retrieve, decrypt, parse
the JSON, dropping each step's copy before the next one is made.

Only public temporalio API is used: ``ExternalStorage.drivers`` /
``driver_selector`` / ``payload_size_threshold``, ``StorageDriver.store`` /
``retrieve`` with the contexts the SDK would pass, and the data converter's
``payload_converter`` and ``payload_codec``.
"""

from __future__ import annotations

from typing import Any

import pydantic_core
from temporalio import activity
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    DataConverter,
    ExternalStorage,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverSelectContext,
    StorageDriverStoreContext,
    StorageDriverWorkflowInfo,
)

from fastmcp_temporal.workflows.models import LegOutcome, StoredResult


async def stored_if_big(outcome: LegOutcome) -> LegOutcome:
    """``outcome`` with its result moved to the store, if the result is past the threshold.

    Runs in the leg activity, with the worker's own converter (codec and
    store). The blob is filed under the task's workflow, like every other
    payload of the task, so the sweep deletes it with the task. A small
    result, or a worker without a store, keeps the result inline.
    """
    converter = activity.client().data_converter
    storage = converter.external_storage
    if outcome.result is None or storage is None:
        return outcome
    (payload,) = converter.payload_converter.to_payloads([outcome.result])
    info = activity.info()
    target = StorageDriverWorkflowInfo(
        namespace=info.workflow_namespace,
        id=info.workflow_id or None,
        type=info.workflow_type or None,
        run_id=info.workflow_run_id or None,
    )
    driver = _driver_for(storage, target, payload)
    if driver is None:
        return outcome
    if converter.payload_codec is not None:
        (payload,) = await converter.payload_codec.encode([payload])
    (claim,) = await driver.store(StorageDriverStoreContext(target=target), [payload])
    stored = StoredResult(
        driver=driver.name(),
        claim=dict(claim.claim_data),
        size_bytes=payload.ByteSize(),
        is_error=bool(outcome.result.get("isError")),
    )
    return outcome.model_copy(update={"result": None, "stored_result": stored})


def _driver_for(
    storage: ExternalStorage, target: StorageDriverWorkflowInfo, payload: Payload
) -> StorageDriver | None:
    """The driver ``storage`` would pick for ``payload`` (``None``: it stays inline)."""
    if payload.ByteSize() < storage.payload_size_threshold:
        return None
    if storage.driver_selector is None:
        return storage.drivers[0]
    return storage.driver_selector(StorageDriverSelectContext(target=target), payload)


async def load_stored_result(converter: DataConverter, stored: StoredResult) -> dict[str, Any]:
    """The result ``stored`` refers to: one retrieve, one decrypt, one parse.

    Each intermediate (the stored payload, the decrypted payload, its JSON
    bytes) is released as soon as the next is built, and the JSON is parsed
    from its bytes (``json.loads`` would decode them to a ``str`` first), so
    the read holds at most two copies of the result in Python memory at once,
    with or without encryption (``bench/investigations/2026-12-01-get-memory``),
    and returns one, the parsed result.
    """
    storage = converter.external_storage
    drivers = {driver.name(): driver for driver in storage.drivers} if storage else {}
    driver = drivers.get(stored.driver)
    if driver is None:
        raise RuntimeError(
            f"The task's result is in payload store {stored.driver!r}, which this server "
            "is not configured with (set payload_store like the workers')"
        )
    claim = StorageDriverClaim(claim_data=dict(stored.claim))
    payloads = await driver.retrieve(StorageDriverRetrieveContext(), [claim])
    if converter.payload_codec is not None:
        payloads = await converter.payload_codec.decode(payloads)
    payload = payloads.pop()
    del payloads
    if payload.metadata.get("encoding") != b"json/plain":
        raise ValueError("The stored task result is not a JSON payload")
    data = payload.data
    del payload
    result = pydantic_core.from_json(data)  # parses the bytes: no decoded str in between
    if not isinstance(result, dict):
        raise ValueError("The stored task result is not a JSON object")
    return result
