"""The caller's credentials in a task's inputs: sealed, or protected by the codec, never clear.

A task restores its creating caller in every leg (``get_access_token()``,
``get_http_headers()``), so the caller's access token and request headers are
part of the task's workflow input and of each leg's input, kept by Temporal
for the task's life. How they are protected depends on the deployment:

- ``FASTMCP_TEMPORAL_ENCRYPTION_KEY`` (or a client whose converter has a payload
  codec): every payload is encrypted, these fields with the rest;
- the embedded default (no Temporal address, no key): only these fields are
  sealed (``CallerSnapshot.sealed_credentials``), with AES-GCM under a key
  generated in the data directory (``credentials-key``, owner-only, found by
  every process of that directory like the scope secret), so the rest of a
  task stays readable in the Web UI without a codec server; by address, the
  same with ``credentials_key_dir`` (``FASTMCP_TEMPORAL_CREDENTIALS_KEY_DIR``),
  for an embedded server started elsewhere (the pytest plugin's session server);
- a Temporal address and no key: a server that authenticates callers refuses
  to start (``CredentialsUnprotected``); an unauthenticated one has no token to
  store, and leaves out headers whose names say they carry a credential;
- ``FASTMCP_TEMPORAL_CREDENTIALS_IN_CLEAR=true``: the behaviour of earlier
  releases, token and headers in clear, for whoever accepts that.

Sealing reuses ``AesGcmCodec``: the sealed field is a serialized encrypted
``Payload`` (key id bound into its tag), and opening fails closed the same way
-- a leg whose worker lacks the key hands the attempt back for one that has it.
Tasks created before any of this carry the clear fields and are read as they are.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.client import Client

from fastmcp_temporal.server.core.codec import (
    ENCODING,
    AesGcmCodec,
    PayloadDecryptionError,
    parse_keys,
)
from fastmcp_temporal.server.core.private_file import read_or_create
from fastmcp_temporal.server.core.settings import env_var, load_settings
from fastmcp_temporal.workflows.models import CallerSnapshot

logger = logging.getLogger(__name__)

KEY_FILE_NAME = "credentials-key"
IN_CLEAR_ENV = env_var("credentials_in_clear")
_KEY_ENV = env_var("encryption_key")
_PLAIN = b"json/plain"
#: Header names that say they carry a credential (``x-api-key``, ``x-auth-token``,
#: ``x-upstream-password``...): left out when nothing would protect them.
_CREDENTIAL_HEADER = re.compile(r"auth|token|secret|passw|api[-_]?key|cookie|credential", re.I)
_MAKE_KEY = 'python -c "import base64, os; print(base64.b64encode(os.urandom(32)).decode())"'


class CredentialsUnprotected(ValueError):
    """An authenticated server on a Temporal address without a key: its tokens would be clear."""

    def __init__(self) -> None:
        super().__init__(
            "fastmcp-temporal: this server authenticates callers and its Temporal has no "
            f"encryption key, so their access tokens would be stored in clear: set {_KEY_ENV} "
            f"on every front end and worker (make one with: {_MAKE_KEY}), or {IN_CLEAR_ENV}=true "
            "to accept that"
        )


class CredentialSeal:
    """Seals a caller's token and headers into one opaque field, and opens it in the leg."""

    def __init__(self, codec: AesGcmCodec) -> None:
        self._codec = codec

    async def seal(self, caller: CallerSnapshot) -> CallerSnapshot:
        """``caller`` with its token and headers moved into ``sealed_credentials``."""
        if caller.access_token_json is None and caller.http_headers is None:
            return caller
        secret = {
            "access_token_json": caller.access_token_json,
            "http_headers": caller.http_headers,
        }
        plain = Payload(metadata={"encoding": _PLAIN}, data=json.dumps(secret).encode())
        (sealed,) = await self._codec.encode([plain])
        return caller.model_copy(
            update={
                "access_token_json": None,
                "http_headers": None,
                "sealed_credentials": base64.b64encode(sealed.SerializeToString()).decode(),
            }
        )

    async def open(self, caller: CallerSnapshot, sealed_credentials: str) -> CallerSnapshot:
        """``caller`` with its token and headers back in their clear fields.

        Only an encrypted payload is accepted: the codec would pass a plaintext
        one through, and a field that claims to be sealed must not be taken on trust.
        """
        sealed = Payload.FromString(base64.b64decode(sealed_credentials))
        if sealed.metadata.get("encoding") != ENCODING:
            raise PayloadDecryptionError("The caller's sealed credentials are not encrypted")
        (plain,) = await self._codec.decode([sealed])
        secret: dict[str, Any] = json.loads(plain.data)
        return caller.model_copy(
            update={
                "access_token_json": secret.get("access_token_json"),
                "http_headers": secret.get("http_headers"),
                "sealed_credentials": None,
            }
        )


@dataclass(frozen=True)
class CredentialPolicy:
    """What this process does with callers' credentials: seal them, drop some, or neither.

    The front end ``protect``s a task's caller just before its workflow starts
    (after fairness has read the headers); a leg ``restore``s it.
    """

    seal: CredentialSeal | None = None
    #: Nothing protects the payloads: leave out headers that name a credential.
    drop_credential_headers: bool = False

    async def protect(self, caller: CallerSnapshot) -> CallerSnapshot:
        if self.seal is not None:
            return await self.seal.seal(caller)
        if self.drop_credential_headers and caller.http_headers:
            kept = without_credential_headers(caller.http_headers)
            return caller.model_copy(update={"http_headers": kept or None})
        return caller

    async def restore(self, caller: CallerSnapshot) -> CallerSnapshot:
        """A caller sealed elsewhere fails closed here without the key: the error is
        retryable, so the leg's attempt runs again on a worker of the data directory
        that sealed it. Tasks from before sealing carry clear fields, read as they are."""
        if caller.sealed_credentials is None:
            return caller
        if self.seal is None:
            raise PayloadDecryptionError(
                "Cannot open the caller's sealed credentials: this worker has no credentials "
                f"key (the {KEY_FILE_NAME} file of the embedded Temporal's data directory)"
            )
        return await self.seal.open(caller, caller.sealed_credentials)


def embedded_seal(data_dir: Path) -> CredentialSeal:
    """The seal of the embedded Temporal in ``data_dir``: its key file, created on first use."""
    path = data_dir / KEY_FILE_NAME
    spec, created = read_or_create(path, _new_key_spec)
    if created:
        logger.info("fastmcp-temporal: generated the credentials key in %s", path)
    keys = parse_keys(spec)
    return CredentialSeal(AesGcmCodec(keys, next(iter(keys))))


def _new_key_spec() -> str:
    """``embedded-<hex>:<key>``: the id tells two data directories' keys apart in errors."""
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    return f"embedded-{secrets.token_hex(4)}:{key}"


def payloads_encrypted(client: Client) -> bool:
    """Whether ``client`` encrypts every payload (a key, or a codec of the user's own)."""
    codec = client.data_converter.payload_codec
    if codec is None:
        return False
    return codec.encrypts if isinstance(codec, AesGcmCodec) else True


def resolve_policy(
    client: Client, *, embedded_data_dir: Path | None, authenticated: bool
) -> CredentialPolicy:
    """This process's policy, from its Temporal (``client``, embedded or not) and its auth.

    Raises ``CredentialsUnprotected`` for an authenticated server whose tokens
    nothing would protect, unless ``FASTMCP_TEMPORAL_CREDENTIALS_IN_CLEAR`` says so.
    """
    if load_settings().credentials_in_clear:
        if authenticated:
            logger.warning(
                "fastmcp-temporal: %s is set: callers' access tokens and headers are "
                "stored in clear in Temporal",
                IN_CLEAR_ENV,
            )
        return CredentialPolicy()
    if payloads_encrypted(client):
        return CredentialPolicy()
    if embedded_data_dir is not None:
        return CredentialPolicy(seal=embedded_seal(embedded_data_dir))
    if authenticated:
        raise CredentialsUnprotected()
    return CredentialPolicy(drop_credential_headers=True)


def without_credential_headers(headers: dict[str, str]) -> dict[str, str]:
    """The headers whose names do not say they carry a credential."""
    return {name: value for name, value in headers.items() if not _CREDENTIAL_HEADER.search(name)}
