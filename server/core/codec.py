"""Encryption at rest: every payload a task writes to Temporal, sealed with AES-GCM.

```python
mcp.add_extension(TemporalTasks(encryption_key=os.environ["TASKS_KEY"]))  # or the env variable
client = await Client.connect(address, data_converter=task_data_converter())  # own worker process
```

A task's history holds what the tool was called with, the caller's access token
and headers, the questions it asked and the answers it got, and its result.
``AesGcmCodec`` encrypts each of those payloads (workflow and activity inputs and
results, signals, memos, summaries, heartbeat details) and
``DefaultFailureConverterWithEncodedAttributes`` moves failure messages and
stack traces into a payload so they are encrypted too. What Temporal keeps in
clear by design -- workflow ids, activity types (the tool names), task queues,
search attributes -- must never carry secrets.

Keys come as ``"<base64 or hex of 32 bytes>"`` or ``"id:key,id2:key2"``: the
first key encrypts, every listed key decrypts, and each payload names the id of
its key (``encryption-key-id`` metadata, also bound into the GCM tag), so keys
rotate by putting a new id first and keeping the old ones while tasks need them.

Decoding fails closed. A plaintext payload passes (it was written before
encryption was turned on), but an encrypted one must decrypt: an unknown key id
or a failed tag raises ``PayloadDecryptionError``. It is a *retryable*
``ApplicationError``: a worker that cannot read a task gives the work back --
its workflow task fails (Temporal retries it, and the Web UI shows the failed
workflow task) or its leg attempt fails (the leg retries) -- so a worker that
holds the key runs it; a misconfigured worker in the fleet delays tasks, never
destroys them. The task fails only when its deadline passes with nobody able
to read it. The failure is kept in clear (it names key ids only) so that any
front end -- even one without the key -- can report why, and it is logged at
ERROR by the process that could not decrypt.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import logging
import os
import re
from collections.abc import Mapping, Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload
from temporalio.api.failure.v1 import Failure
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import (
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    ExternalStorage,
    FailureConverter,
    PayloadCodec,
    PayloadConverter,
)
from temporalio.exceptions import ApplicationError

from fastmcp_temporal.server.core.settings import env_var, load_settings, revealed
from fastmcp_temporal.server.core.task_payloads import payload_converter_for
from fastmcp_temporal.workflows.models import UNDECRYPTABLE_ERROR_TYPE

logger = logging.getLogger(__name__)

#: Where the key configuration is read from when none is passed explicitly.
KEY_ENV = env_var("encryption_key")
#: The id a key listed without one gets (``"k2:<new>,default:<old>"`` rotates it).
DEFAULT_KEY_ID = "default"
ENCODING = b"binary/encrypted"
KEY_ID_METADATA = "encryption-key-id"
_NONCE_BYTES = 12
_KEY_BYTES = 32
_KEY_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_HEX_KEY = re.compile(r"^[0-9a-fA-F]{64}$")


class PayloadDecryptionError(ApplicationError):
    """An encrypted payload this process cannot open: give the work back, never guess.

    Retryable, because another process may hold the key: inside a workflow
    activation a non-retryable error would fail the workflow outright (the
    SDK's rule), a retryable one fails only the workflow task. The message
    names key ids, never key material or payload contents.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, type=UNDECRYPTABLE_ERROR_TYPE, non_retryable=False)


def parse_keys(spec: str) -> dict[str, bytes]:
    """``"<key>"`` or ``"id:key,id2:key2"`` -> ``{id: key}`` in order (first is active).

    A key is 32 bytes as base64 (standard or URL-safe, padding optional) or hex.
    Errors never echo key material.
    """
    entries = [entry.strip() for entry in spec.split(",") if entry.strip()]
    if not entries:
        raise ValueError("The encryption key configuration is empty")
    keys: dict[str, bytes] = {}
    for entry in entries:
        key_id, separator, material = entry.partition(":")
        if not separator:
            if len(entries) > 1:
                raise ValueError("With several encryption keys, write each one as 'id:key'")
            key_id, material = DEFAULT_KEY_ID, entry
        if not _KEY_ID.match(key_id):
            raise ValueError(f"Invalid encryption key id {key_id!r}: use 1-64 of [A-Za-z0-9._-]")
        if key_id in keys:
            raise ValueError(f"Encryption key id {key_id!r} is listed twice")
        keys[key_id] = _decode_key(key_id, material.strip())
    return keys


def _decode_key(key_id: str, material: str) -> bytes:
    if _HEX_KEY.match(material):
        return bytes.fromhex(material)
    standard = material.replace("-", "+").replace("_", "/")
    try:
        key = base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    except binascii.Error:
        raise ValueError(f"Encryption key {key_id!r} is neither base64 nor hex") from None
    if len(key) != _KEY_BYTES:
        raise ValueError(
            f"Encryption key {key_id!r} is {len(key)} bytes; AES-256 needs {_KEY_BYTES}"
        )
    return key


class AesGcmCodec(PayloadCodec):
    """AES-256-GCM over whole serialized payloads, with a keyring for rotation.

    Args:
        keys: Key id -> 32-byte key. Every key decrypts.
        active_key_id: The key that encrypts; ``None`` encrypts nothing (the
            codec then only refuses encrypted payloads, see ``decode``).
    """

    def __init__(self, keys: Mapping[str, bytes], active_key_id: str | None) -> None:
        for key_id, key in keys.items():
            if not _KEY_ID.match(key_id):
                raise ValueError(f"Invalid encryption key id {key_id!r}")
            if len(key) != _KEY_BYTES:
                raise ValueError(f"Encryption key {key_id!r} must be {_KEY_BYTES} bytes")
        if active_key_id is not None and active_key_id not in keys:
            raise ValueError(f"The active key id {active_key_id!r} is not among the keys")
        self._ciphers = {key_id: AESGCM(key) for key_id, key in keys.items()}
        self.active_key_id = active_key_id

    @classmethod
    def from_spec(cls, spec: str) -> AesGcmCodec:
        """A codec from ``parse_keys`` syntax; the first key listed is the active one."""
        keys = parse_keys(spec)
        return cls(keys, next(iter(keys)))

    @property
    def encrypts(self) -> bool:
        """Whether ``encode`` seals payloads (a codec without keys only guards ``decode``)."""
        return self.active_key_id is not None

    @property
    def key_ids(self) -> list[str]:
        """The ids of every key that decrypts (never the keys)."""
        return list(self._ciphers)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        key_id = self.active_key_id
        if key_id is None:
            return list(payloads)
        cipher = self._ciphers[key_id]
        sealed: list[Payload] = []
        for payload in payloads:
            nonce = os.urandom(_NONCE_BYTES)
            data = cipher.encrypt(nonce, payload.SerializeToString(), key_id.encode())
            sealed.append(
                Payload(
                    metadata={"encoding": ENCODING, KEY_ID_METADATA: key_id.encode()},
                    data=nonce + data,
                )
            )
        return sealed

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Open encrypted payloads; pass plaintext ones; raise on anything else.

        Plaintext is accepted so that turning encryption on does not break tasks
        already running; an encrypted payload is never passed on unopened.
        """
        return [self._open(payload) for payload in payloads]

    def _open(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload
        try:
            return self._decrypt(payload)
        except PayloadDecryptionError as err:
            # Loud: a worker that logs this is misconfigured, and hands its work back.
            logger.error("%s; leaving it to a process that holds the key", err.message)
            raise

    def _decrypt(self, payload: Payload) -> Payload:
        key_id = payload.metadata.get(KEY_ID_METADATA, b"").decode(errors="replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            held = ", ".join(repr(known) for known in self.key_ids) or "none"
            raise PayloadDecryptionError(
                f"Cannot decrypt a task payload: it was encrypted with key id {key_id!r}, "
                f"and this process holds {held}"
            )
        data = payload.data
        try:
            # A view, not a slice: a big payload is not copied once more.
            sealed = memoryview(data)[_NONCE_BYTES:]
            plain = cipher.decrypt(data[:_NONCE_BYTES], sealed, key_id.encode())
            del sealed, data
            return Payload.FromString(plain)
        except (InvalidTag, ValueError, DecodeError):
            # ValueError: data shorter than nonce + tag; DecodeError: not a payload.
            raise PayloadDecryptionError(
                f"Cannot decrypt a task payload under key id {key_id!r}: authentication "
                "failed (a different key under the same id, or a tampered payload)"
            ) from None


class _FailureConverter(DefaultFailureConverterWithEncodedAttributes):
    """Failure messages and stack traces go through the codec -- except ours.

    A ``PayloadDecryptionError`` names key ids only, and the front end that
    reports the failed task may be exactly the process that lacks the key, so
    that failure stays readable, with the SDK's wrapper around it ("Failed
    decoding arguments" when a leg's input could not be opened).
    """

    def to_failure(
        self, exception: BaseException, payload_converter: PayloadConverter, failure: Failure
    ) -> None:
        if isinstance(exception, PayloadDecryptionError) or isinstance(
            exception.__cause__, PayloadDecryptionError
        ):
            FailureConverter.default.to_failure(exception, payload_converter, failure)
            return
        super().to_failure(exception, payload_converter, failure)


def codec_from_config(encryption_key: str | None = None) -> AesGcmCodec:
    """The codec for ``encryption_key``, else ``$FASTMCP_TEMPORAL_ENCRYPTION_KEY``.

    With neither, a codec without keys: it encrypts nothing, but still refuses
    an encrypted payload, so a process that was not given the key fails such a
    task with a clear error instead of choking on ``binary/encrypted`` forever.
    """
    if encryption_key is None:
        encryption_key = revealed(load_settings().encryption_key)
    if encryption_key is None or not encryption_key.strip():
        return AesGcmCodec({}, None)
    return AesGcmCodec.from_spec(encryption_key)


def task_data_converter(
    encryption_key: str | None = None,
    *,
    payload_storage: ExternalStorage | None = None,
    payload_converter_class: type[PayloadConverter] | None = None,
) -> DataConverter:
    """The converter every client and worker of MCP tasks should use.

    Pydantic payloads, the ``AesGcmCodec`` of ``codec_from_config``, (when it
    encrypts) failure messages moved into encrypted attributes, and the
    external storage big payloads go to (``payload_store``): it stores what the
    codec produced, so an encrypted task's blobs are ciphertext too.
    ``payload_converter_class``: an agent framework's converter for every payload
    that is not one of the task's own models (``task_payloads``), e.g. the OpenAI
    Agents SDK's ``OpenAIPayloadConverter``; default: pydantic JSON for all.
    """
    codec = codec_from_config(encryption_key)
    converter = dataclasses.replace(
        pydantic_data_converter,
        payload_converter_class=payload_converter_for(payload_converter_class),
        payload_codec=codec,
        external_storage=payload_storage,
    )
    if not codec.encrypts:
        return converter
    return dataclasses.replace(converter, failure_converter_class=_FailureConverter)
