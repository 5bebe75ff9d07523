"""A 2025-xx MCP session sealed into its id: any front end opens it, for bounded work.

An ``s3.`` id is ``s3.`` and, in unpadded base64url, a header in clear -- when it
was issued and the age limit it was minted under (milliseconds, two big-endian
64-bit integers) -- a 96-bit random nonce, and the session (the ``initialize``
params the client sent and the protocol version the SDK negotiated for them, as
compact JSON, zlib-compressed) sealed with AES-256-GCM under a key every front end
derives from the scope secret. The associated data binds the header and the
caller's principal (``scope.principal_scope``): the age in clear cannot be altered,
and another caller's id does not open.

Whatever a client sends as ``Mcp-Session-Id``, opening or refusing it costs bounded,
small work that does not depend on what was sealed:

1. the cheap checks, in clear and before anything is decrypted: the prefix, at most
   ``MAX_ID_CHARS``, the one spelling it was minted in, the age (the limit the id
   was minted under: every replica applies that one, not its own setting), and
   whether it was logged out (``DELETE`` here or on any front end: a set lookup,
   see ``session_logouts``);
2. an id this process opened before is a lookup in a bounded LRU cache, which
   still honours the age, logouts and the caller;
3. else one AES-GCM decryption of at most ``MAX_ID_CHARS`` characters, a
   decompression stopped at ``MAX_SEALED_BYTES`` and a JSON parse of at most that,
   holding at most ``MAX_SEALED_VALUES`` values (what a rebuild of the session on
   this front end then costs grows with them).

What may be sealed is capped there too: an ``initialize`` whose session would be
larger than ``MAX_SEALED_BYTES`` once serialized or hold more than
``MAX_SEALED_VALUES`` values (or whose body is larger than ``MAX_OPENING_BYTES``: not
even parsed for sealing), or whose id would be longer than ``MAX_ID_CHARS``, gets the
SDK's own session, served only by the front end that opened it (the documented
fallback; logged).

``s2.`` ids (from before this layout: the issue time inside the ciphertext, no age
limit) still open during a rolling upgrade, through the same bounded path, under
this front end's own age limit: refusing them would break every session a previous
release opened (the MCP Python client does not start over after a ``404``), and
with the caps they cost what an ``s3.`` id costs. They are gone one age limit
after the upgrade; then ``_LEGACY_PREFIX`` can go.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import struct
import time
import zlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from mcp.server.auth.provider import AccessToken
from mcp_types import InitializeRequestParams
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError
from temporalio.client import Client

from fastmcp_temporal.server.core.scope import SCOPE_SECRET_ENV, principal_scope
from fastmcp_temporal.server.protocol.session_logouts import SharedLogouts

logger = logging.getLogger(__name__)

#: Longest id minted or opened: within the 4-8 KiB header lines proxies and uvicorn accept.
MAX_ID_CHARS = 4096
#: Largest session sealed or unsealed (its JSON): a real ``initialize`` is well under 1 KiB,
#: and one that does not compress would not fit ``MAX_ID_CHARS`` much above this anyway.
MAX_SEALED_BYTES = 4 * 1024
#: Most JSON values (objects, arrays, strings, numbers, ...) a sealed session's params
#: hold: what rebuilding a session on another front end costs grows with them, not with
#: its bytes. A real ``initialize`` has a few dozen.
MAX_SEALED_VALUES = 256
#: Largest ``initialize`` body parsed for sealing.
MAX_OPENING_BYTES = 4 * MAX_SEALED_BYTES
_PREFIX = "s3."
#: Ids of the previous layout, opened until they expire (see the module docstring).
_LEGACY_PREFIX = "s2."
_KEY_LABEL = b"fastmcp-temporal/mcp-session/v2"
_TAG_LABEL = b"fastmcp-temporal/mcp-session-logouts"
_HEADER = struct.Struct(">QQ")  # issued, max age: milliseconds
_LONGEST_AGE_MS = 2**63
_NONCE_BYTES = 12
#: The one spelling of a minted id after its prefix: unpadded base64url. The decoder
#: skips other characters, which would give one id many spellings (and a blank in
#: one is refused by the SDK's transport).
_ENCODED = re.compile(r"[A-Za-z0-9_-]+")
#: Ids opened here kept at most, and the sealed JSON they hold at most (the cache's memory).
_CACHED_IDS = 4096
_CACHED_BYTES = 4 * 1024 * 1024
#: Logged-out ids remembered at most, each until it expires.
_ENDED_KEPT = 100_000


@dataclass(frozen=True)
class _Opened:
    params: dict[str, Any]
    bound_to: bytes
    expires: float
    weight: int


@dataclass(frozen=True)
class _Parsed:
    """What the cheap checks read from an id, before anything is decrypted."""

    header: bytes  # empty for a legacy id
    nonce: bytes
    ciphertext: bytes
    #: ``None`` for a legacy id: its age is in the ciphertext.
    expires: float | None


class SessionSeal:
    """Seals a session's ``initialize`` params into its id, bound to its caller, and opens it."""

    def __init__(
        self,
        key: bytes,
        max_age_s: float,
        clock: Callable[[], float] = time.time,
        *,
        shared: bool = False,
    ) -> None:
        self._aead = AESGCM(key)
        self._max_age_ms = min(int(max_age_s * 1000), _LONGEST_AGE_MS)
        self._clock = clock
        self._opened: OrderedDict[str, _Opened] = OrderedDict()
        self._opened_bytes = 0
        #: Nonces of logged-out ids, with when each expires anyway.
        self._ended: dict[bytes, float] = {}
        tag = hmac.new(key, _TAG_LABEL, hashlib.sha256).hexdigest()[:16]
        self._logouts = SharedLogouts(tag, self._remember_ended, clock) if shared else None

    @classmethod
    def for_deployment(cls, scope_secret: bytes | None, max_age_s: float) -> SessionSeal:
        """Under a key derived from the deployment's scope secret, else this process's own."""
        if scope_secret is None:
            logger.info(
                "fastmcp-temporal: no scope secret (%s): a 2025-xx MCP session is served "
                "only by the front end that started it",
                SCOPE_SECRET_ENV,
            )
            return cls(os.urandom(32), max_age_s)
        key = hmac.new(scope_secret, _KEY_LABEL, hashlib.sha256).digest()
        return cls(key, max_age_s, shared=True)

    @contextlib.asynccontextmanager
    async def sharing_logouts(self, client: Client) -> AsyncIterator[None]:
        """While inside, a logout (``end``) here reaches every front end of the deployment
        through ``client``'s Temporal, and theirs reach this one. Without a scope secret,
        nothing: the sessions are this process's alone."""
        if self._logouts is None:
            yield
            return
        async with self._logouts.running(client):
            yield

    def mint(self, opening_body: bytes, caller: AccessToken | None) -> str | None:
        """A new session's id, if ``opening_body`` is a well-formed ``initialize`` request.

        ``None`` for anything else (the SDK answers it as it always did), and for a
        session too big to seal (the SDK's own session, served by this front end).
        """
        if len(opening_body) > MAX_OPENING_BYTES:
            _too_big("an initialize of %d bytes exceeds %d", len(opening_body), MAX_OPENING_BYTES)
            return None
        params = _initialize_params(opening_body)
        if params is None:
            return None
        try:
            session_id = self.seal(params, _negotiated(params), caller)
        except (ValueError, RecursionError) as err:  # too big, or nested deeper than it parsed
            _too_big("%s", err)
            return None
        if len(session_id) > MAX_ID_CHARS:
            _too_big("a session id of %d characters exceeds %d", len(session_id), MAX_ID_CHARS)
            return None
        return session_id

    def seal(self, params: dict[str, Any], version: str, caller: AccessToken | None) -> str:
        """``params`` and the protocol ``version`` negotiated for them, as an id minted
        now under this front end's age limit; ``ValueError`` if the session's JSON
        exceeds ``MAX_SEALED_BYTES``."""
        if not _values_within(params, MAX_SEALED_VALUES):
            raise ValueError(f"a session of more than {MAX_SEALED_VALUES} JSON values")
        plain = json.dumps({"params": params, "version": version}, separators=(",", ":"))
        if len(plain) > MAX_SEALED_BYTES:
            raise ValueError(f"a session of {len(plain)} bytes exceeds {MAX_SEALED_BYTES}")
        header = _HEADER.pack(int(self._clock() * 1000), self._max_age_ms)
        nonce = os.urandom(_NONCE_BYTES)
        associated = header + _bound_to(caller)
        sealed = self._aead.encrypt(nonce, zlib.compress(plain.encode()), associated)
        return _PREFIX + base64.urlsafe_b64encode(header + nonce + sealed).rstrip(b"=").decode()

    def open(self, session_id: str, caller: AccessToken | None) -> dict[str, Any] | None:
        """The ``initialize`` params sealed in ``session_id`` for ``caller``, else ``None``:
        also for an id past its age, logged out, or one this SDK would negotiate another
        protocol version for. Do not change what it returns: it is cached."""
        parsed = _parse(session_id)
        now = self._clock()
        if parsed is None or (parsed.expires is not None and now > parsed.expires):
            return None
        if parsed.nonce in self._ended:
            return None
        bound_to = _bound_to(caller)
        cached = self._opened.get(session_id)
        if cached is not None:
            if cached.bound_to != bound_to or now > cached.expires:
                return None
            self._opened.move_to_end(session_id)
            return cached.params
        opened = self._unseal(parsed, bound_to, now)
        if opened is None:
            return None
        self._cache(session_id, opened)
        return opened.params

    def end(self, session_id: str) -> None:
        """``DELETE``d: refused here from now on and, while ``sharing_logouts``, on every
        front end of the deployment within seconds (until it expires). Only an id this
        process opened is told to the others: no one else's request starts a workflow."""
        parsed = _parse(session_id)
        if parsed is None:
            return
        cached = self._opened.pop(session_id, None)
        if cached is not None:
            self._opened_bytes -= cached.weight
        expires = parsed.expires or (cached.expires if cached else self._own_expiry())
        self._remember_ended(parsed.nonce, expires)
        if self._logouts is not None and cached is not None:
            self._logouts.publish(parsed.nonce, expires)

    @staticmethod
    def minted(session_id: str) -> bool:
        """Whether ``session_id`` claims to be sealed here (not one of the SDK's own)."""
        return session_id.startswith((_PREFIX, _LEGACY_PREFIX))

    def _unseal(self, parsed: _Parsed, bound_to: bytes, now: float) -> _Opened | None:
        """Decrypt, decompress (bounded) and parse: each bounded by the caps."""
        try:
            plain = self._aead.decrypt(parsed.nonce, parsed.ciphertext, parsed.header + bound_to)
        except (ValueError, InvalidTag):
            return None
        text = _decompressed(plain)
        if text is None:
            return None
        try:
            session = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if not isinstance(session, dict) or not isinstance(session.get("params"), dict):
            return None
        if not _values_within(session["params"], MAX_SEALED_VALUES):
            return None  # a legacy id: sealed before the cap
        expires = parsed.expires
        if expires is None:  # a legacy id: issued inside, under this front end's limit
            issued = session.get("issued")
            if not isinstance(issued, int | float):
                return None
            expires = issued + self._max_age_ms / 1000
            if now > expires:
                return None
        params: dict[str, Any] = session["params"]
        if (here := _negotiated(params)) != session.get("version"):
            logger.warning(
                "fastmcp-temporal: refused a session: it negotiated protocol %s where it "
                "began, this front end's MCP SDK would negotiate %s; the client must "
                "initialize again",
                session.get("version"),
                here,
            )
            return None
        return _Opened(params, bound_to, expires, len(text))

    def _cache(self, session_id: str, opened: _Opened) -> None:
        self._opened[session_id] = opened
        self._opened_bytes += opened.weight
        while len(self._opened) > _CACHED_IDS or self._opened_bytes > _CACHED_BYTES:
            _, evicted = self._opened.popitem(last=False)
            self._opened_bytes -= evicted.weight

    def _remember_ended(self, nonce: bytes, expires: float) -> None:
        if expires < self._clock():
            return
        if len(self._ended) >= _ENDED_KEPT:
            now = self._clock()
            self._ended = {key: until for key, until in self._ended.items() if until > now}
            for key in list(self._ended)[: max(0, len(self._ended) - _ENDED_KEPT * 9 // 10)]:
                del self._ended[key]  # the oldest remembered first
        self._ended[nonce] = expires

    def _own_expiry(self) -> float:
        return self._clock() + self._max_age_ms / 1000


def _parse(session_id: str) -> _Parsed | None:
    """The cheap checks: prefix, length, the one spelling, the header in clear."""
    if len(session_id) > MAX_ID_CHARS:
        return None
    legacy = session_id.startswith(_LEGACY_PREFIX)
    if not legacy and not session_id.startswith(_PREFIX):
        return None
    encoded = session_id[len(_PREFIX) :]
    if not _ENCODED.fullmatch(encoded):
        return None
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError):
        return None
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != encoded:
        return None  # trailing bits set: another spelling of some id
    header_bytes = 0 if legacy else _HEADER.size
    if len(raw) <= header_bytes + _NONCE_BYTES:
        return None
    header = raw[:header_bytes]
    nonce = raw[header_bytes : header_bytes + _NONCE_BYTES]
    ciphertext = raw[header_bytes + _NONCE_BYTES :]
    if legacy:
        return _Parsed(b"", nonce, ciphertext, None)
    issued_ms, max_age_ms = _HEADER.unpack(header)
    return _Parsed(header, nonce, ciphertext, (issued_ms + max_age_ms) / 1000)


def _decompressed(plain: bytes) -> bytes | None:
    """``plain`` inflated, if it inflates whole to at most ``MAX_SEALED_BYTES``."""
    inflater = zlib.decompressobj()
    try:
        text = inflater.decompress(plain, MAX_SEALED_BYTES + 1)
    except zlib.error:
        return None
    if len(text) > MAX_SEALED_BYTES or not inflater.eof:
        return None
    return text


def _values_within(document: Any, cap: int) -> bool:
    """Whether ``document`` holds at most ``cap`` JSON values (stops counting past it)."""
    pending, counted = [document], 0
    while pending:
        value = pending.pop()
        counted += 1
        if counted > cap:
            return False
        if isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return True


def _too_big(reason: str, *args: object) -> None:
    logger.warning(
        "fastmcp-temporal: " + reason + "; this session is served only by the front end "
        "that started it (the SDK's own session)",
        *args,
    )


def _initialize_params(body: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # the SDK answers it -32700, as without us
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    params = message.get("params")
    if "id" not in message or not isinstance(params, dict):
        return None
    try:
        InitializeRequestParams.model_validate(params, by_name=False)
    except ValidationError:
        return None
    return params


def _negotiated(params: dict[str, Any]) -> str:
    """The protocol version this process's MCP SDK agrees to for ``params`` (as its
    ``initialize`` does: the one asked for if it knows it, else its latest)."""
    requested = params.get("protocolVersion")
    return requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION


def _bound_to(caller: AccessToken | None) -> bytes:
    """Whose session it is (another caller's id does not open)."""
    return b"anonymous" if caller is None else principal_scope(caller).encode()
