"""2025-xx MCP sessions any front end serves: the session id carries the session.

On the handshake-era wire (``initialize``, protocol 2025-03-26 to 2025-11-25, as
Codex speaks it) a client sends the id ``initialize`` gave it (``Mcp-Session-Id``)
with every later request. The MCP SDK keeps the session in the memory of the
process that answered ``initialize``, so behind a load balancer the next request,
on another front end, got ``404 Session not found`` -- and so did every session of
a front end a deploy stopped. The MCP Python client does not start over after that
404: its session stays broken.

Here the id *is* the session: the ``initialize`` params the client sent (protocol
version, capabilities, client info), the version the SDK negotiated for them and
when, compressed and sealed with AES-256-GCM under a key every front end derives
from the scope secret, with the caller's principal (``scope.principal_scope``) as
associated data. A front end that gets an id it does not serve opens it and
rebuilds the session by replaying that ``initialize`` and
``notifications/initialized`` through its own app, so the session negotiates
there what it negotiated where it began, and FastMCP's ``on_initialize``
middleware runs for it there too (``portable_sessions``: the HTTP seam, an ASGI
middleware on this server's app, which keeps the SDK's own session id per
front end behind the sealed one). An id that is forged, altered, sealed under
another secret or sent by another caller opens to nothing: an unknown session,
``404``, as before; each request checks it, also on the front end that serves it.
So does an id past ``session_max_age_s`` (no id lives for ever: an anonymous
caller's is a bearer token), one a front end would negotiate another protocol
version for (replicas of different SDKs mid-upgrade: the client initializes again),
and one spelled any way but the one it was minted in. No store: a random nonce
makes every id unique.

Questions a durable call asks and their answers, and a client's cancel of a
durable call, reach their task from any front end (``live_calls``). What cannot
move, because it happens in one process:

- a request in flight: its answer is an HTTP response of the front end serving it;
- notifications outside a request go to the GET stream the sending front end holds;
- ``logging/setLevel`` holds on the front end that received it; elsewhere the
  server's ``client_log_level`` applies;
- a body that asks inline (``await ctx.elicit()``; a task tool's body that does runs
  inline, ``live_request``): the SDK reads the answer only on the front end that asked;
- FastMCP's session state (``ctx.set_state``) is keyed by the front end's own
  session id; ``Last-Event-ID`` resumes only where the events were stored;
- ``DELETE`` ends the session on the front end that receives it, which refuses the
  id from then on; another front end serves it until its ``session_max_age_s``
  (no revocation without a store).

Subscriptions need nothing: FastMCP serves no ``resources/subscribe``, and
``subscriptions/listen`` (2026-07-28) is a request of its own, without a session.

Without a scope secret (a Temporal address and no ``FASTMCP_TEMPORAL_SCOPE_SECRET``)
the key is this process's own: a session is served only by the front end that
started it, while it runs, as the SDK's own sessions are. An ``initialize`` whose id
would be longer than ``MAX_ID_CHARS`` (headers proxies and servers accept) gets the
SDK's own session.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import re
import time
import zlib
from collections.abc import Callable
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from mcp.server.auth.provider import AccessToken
from mcp_types import InitializeRequestParams
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

from fastmcp_temporal.server.core.scope import SCOPE_SECRET_ENV, principal_scope

logger = logging.getLogger(__name__)

#: Longest id minted: within the 4-8 KiB header lines proxies and uvicorn accept.
MAX_ID_CHARS = 4096
#: Marks an id this module sealed (the SDK's own ids are 32 hex digits). ``s1.`` ids
#: (no age, no negotiated version) are no longer opened: the SDK answers them ``404``.
_PREFIX = "s2."
_KEY_LABEL = b"fastmcp-temporal/mcp-session/v2"
_NONCE_BYTES = 12
#: The one spelling of a minted id after its prefix: unpadded base64url. The decoder
#: skips other characters, which would give one id many spellings (and a blank in
#: one is refused by the SDK's transport).
_ENCODED = re.compile(r"[A-Za-z0-9_-]+")
#: Ids ended here by ``DELETE`` remembered at most (the oldest forgotten first).
_ENDED_KEPT = 10_000


class SessionSeal:
    """Seals a session's ``initialize`` params into its id, bound to its caller, and opens it."""

    def __init__(
        self, key: bytes, max_age_s: float, clock: Callable[[], float] = time.time
    ) -> None:
        self._aead = AESGCM(key)
        self._max_age_s = max_age_s
        self._clock = clock
        #: Ids ``DELETE``d here, with when they would have expired anyway.
        self._ended: dict[str, float] = {}

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
        return cls(hmac.new(scope_secret, _KEY_LABEL, hashlib.sha256).digest(), max_age_s)

    def mint(self, opening_body: bytes, caller: AccessToken | None) -> str | None:
        """A new session's id, if ``opening_body`` is a well-formed ``initialize`` request.

        ``None`` for anything else (the SDK answers it as it always did) and for an
        id too long to travel as a header.
        """
        params = _initialize_params(opening_body)
        if params is None:
            return None
        session = {"params": params, "version": _negotiated(params), "issued": self._clock()}
        session_id = self.seal(session, caller)
        if len(session_id) > MAX_ID_CHARS:
            logger.warning(
                "fastmcp-temporal: a session id of %d characters would exceed %d; this "
                "session is served only by the front end that started it",
                len(session_id),
                MAX_ID_CHARS,
            )
            return None
        return session_id

    def seal(self, session: dict[str, Any], caller: AccessToken | None) -> str:
        """``session`` (its params, negotiated version and issue time) as an id."""
        plain = zlib.compress(json.dumps(session, separators=(",", ":")).encode())
        nonce = os.urandom(_NONCE_BYTES)
        sealed = nonce + self._aead.encrypt(nonce, plain, _bound_to(caller))
        return _PREFIX + base64.urlsafe_b64encode(sealed).rstrip(b"=").decode()

    def open(self, session_id: str, caller: AccessToken | None) -> dict[str, Any] | None:
        """The ``initialize`` params sealed in ``session_id`` for ``caller``, else ``None``:
        also for an id past its age, ended here, or one this SDK would negotiate
        another protocol version for."""
        encoded = session_id.removeprefix(_PREFIX)
        if not _ENCODED.fullmatch(encoded):
            return None
        try:
            sealed = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        except (binascii.Error, ValueError):
            return None
        if base64.urlsafe_b64encode(sealed).rstrip(b"=").decode() != encoded:
            return None  # trailing bits set: another spelling of some id
        try:
            nonce, ciphertext = sealed[:_NONCE_BYTES], sealed[_NONCE_BYTES:]
            plain = self._aead.decrypt(nonce, ciphertext, _bound_to(caller))
        except (ValueError, InvalidTag):
            return None
        session: dict[str, Any] = json.loads(zlib.decompress(plain))  # sealed here: a dict
        if self._clock() - session["issued"] > self._max_age_s or session_id in self._ended:
            return None
        params: dict[str, Any] = session["params"]
        if (here := _negotiated(params)) != session["version"]:
            logger.warning(
                "fastmcp-temporal: refused session %s: it negotiated protocol %s where it "
                "began, this front end's MCP SDK would negotiate %s; the client must "
                "initialize again",
                session_id[:16],
                session["version"],
                here,
            )
            return None
        return params

    def end(self, session_id: str) -> None:
        """``DELETE``d here: this process refuses the id from now on (until it expires)."""
        now = self._clock()
        self._ended = {key: until for key, until in self._ended.items() if until > now}
        while len(self._ended) >= _ENDED_KEPT:
            del self._ended[next(iter(self._ended))]
        self._ended[session_id] = now + self._max_age_s

    @staticmethod
    def minted(session_id: str) -> bool:
        """Whether ``session_id`` claims to be sealed here (not one of the SDK's own)."""
        return session_id.startswith(_PREFIX)


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
    """The associated data: whose session it is (another caller's id does not open)."""
    return b"anonymous" if caller is None else principal_scope(caller).encode()
