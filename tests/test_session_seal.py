"""The sealed session id (``fastmcp_temporal.server.protocol.session_seal``), in process.

An id opens to the ``initialize`` it sealed, on any replica of the deployment and no
other, in the one spelling it was minted in, until the age limit it was minted under
(not the opening replica's), for its caller only, and not once logged out; the cache
of opened ids honours all of that. Only a well-formed ``initialize`` gets an id, and
one too big to seal gets none (the SDK's own session). A replica that would negotiate
another version refuses the id. ``s2.`` ids of the previous release still open, through
the same bounded path: one sealing a huge ``initialize`` opens to nothing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from fastmcp.server.auth import AccessToken

from fastmcp_temporal.server.core.scope import principal_scope
from fastmcp_temporal.server.protocol.session_seal import (
    MAX_ID_CHARS,
    MAX_OPENING_BYTES,
    SessionSeal,
)

PROTOCOL = "2025-06-18"
DAY_S = 86_400.0
SECRET = "one deployment's scope secret"
OTHER_SECRET = "another deployment's secret!"
HELLO = {
    "protocolVersion": PROTOCOL,
    "capabilities": {},
    "clientInfo": {"name": "c", "version": "1"},
}
#: The ``initialize`` of issue 49: 3.8 MB that an ``s2.`` id sealed into about 4 kB.
HUGE = {**HELLO, "capabilities": {"experimental": {"x": {"l": [[]] * 900_000}}}}


def opening(params: dict[str, Any]) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    ).encode()


def caller(user: str) -> AccessToken:
    return AccessToken(token=f"user-{user}", client_id="app", scopes=[], claims={"sub": user})


def deployment_key(secret: str = SECRET) -> bytes:
    """The key ``SessionSeal.for_deployment`` derives (``s2.`` ids were sealed under it too)."""
    return hmac.new(secret.encode(), b"fastmcp-temporal/mcp-session/v2", hashlib.sha256).digest()


def legacy_id(
    params: dict[str, Any], issued: float, secret: str = SECRET, user: str | None = None
) -> str:
    """An ``s2.`` id as the previous release sealed it, for ``user`` (else anonymous)."""
    key = deployment_key(secret)
    bound_to = b"anonymous" if user is None else principal_scope(caller(user)).encode()
    session = {"params": params, "version": PROTOCOL, "issued": issued}
    plain = zlib.compress(json.dumps(session, separators=(",", ":")).encode())
    nonce = os.urandom(12)
    sealed = nonce + AESGCM(key).encrypt(nonce, plain, bound_to)
    return "s2." + base64.urlsafe_b64encode(sealed).rstrip(b"=").decode()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_an_id_opens_to_the_initialize_it_sealed_and_is_unique() -> None:
    seal = SessionSeal.for_deployment(SECRET.encode(), DAY_S)
    first, second = seal.mint(opening(HELLO), None), seal.mint(opening(HELLO), None)
    assert first is not None and second is not None and first != second
    assert first.startswith("s3.") and SessionSeal.minted(first)
    assert seal.open(first, None) == seal.open(second, None) == HELLO
    replica = SessionSeal.for_deployment(SECRET.encode(), DAY_S)
    assert replica.open(first, None) == HELLO
    assert SessionSeal.for_deployment(OTHER_SECRET.encode(), DAY_S).open(first, None) is None


@pytest.mark.parametrize(
    "session_id",
    ["s3.", "s3.!!", "s3.AAAA", "s3.é", "s3." + "A" * 40, "s3." + "A" * 5000, "s2.", "0" * 32],
)
def test_a_forged_id_opens_to_nothing(session_id: str) -> None:
    assert SessionSeal.for_deployment(SECRET.encode(), DAY_S).open(session_id, None) is None


@pytest.mark.parametrize(
    "spell",
    [
        pytest.param(lambda sid: sid[:10] + "\t" + sid[10:], id="a-tab-inside"),
        pytest.param(lambda sid: sid[:10] + " " + sid[10:], id="a-blank-inside"),
        pytest.param(lambda sid: sid[:10] + "!" + sid[10:], id="a-stray-character"),
        pytest.param(lambda sid: sid + "=", id="padded"),
        pytest.param(lambda sid: sid[:-1] + chr(ord(sid[-1]) ^ 1), id="trailing-bits"),
        pytest.param(lambda sid: sid[:5] + chr(ord(sid[5]) ^ 1) + sid[6:], id="age-altered"),
    ],
)
def test_an_id_opens_only_in_the_spelling_it_was_minted_in(spell: Callable[[str], str]) -> None:
    """The base64 decoder skips what it does not know: without the check, one id had
    many spellings (each a session of its own), and one with a blank in it made the
    SDK's transport raise. The age in clear is bound too: altered, the id is no id."""
    seal = SessionSeal.for_deployment(SECRET.encode(), DAY_S)
    session_id = seal.mint(opening(HELLO), None)
    assert session_id is not None and seal.open(session_id, None) == HELLO
    assert seal.open(spell(session_id), None) is None


def test_an_id_opens_until_its_age() -> None:
    clock = Clock()
    seal = SessionSeal(b"k" * 32, max_age_s=60, clock=clock)
    session_id = seal.mint(opening(HELLO), None)
    assert session_id is not None
    clock.now += 60
    assert seal.open(session_id, None) == HELLO  # cached from here on
    clock.now += 1
    assert seal.open(session_id, None) is None


def test_every_replica_applies_the_age_the_id_was_minted_under() -> None:
    clock = Clock()
    strict = SessionSeal(b"k" * 32, max_age_s=60, clock=clock)
    lenient = SessionSeal(b"k" * 32, max_age_s=DAY_S, clock=clock)
    minted_strict, minted_lenient = (
        strict.mint(opening(HELLO), None),
        lenient.mint(opening(HELLO), None),
    )
    assert minted_strict is not None and minted_lenient is not None
    clock.now += 120
    assert lenient.open(minted_strict, None) is None
    assert strict.open(minted_lenient, None) == HELLO


def test_the_cache_of_opened_ids_honours_the_caller_and_logouts() -> None:
    seal = SessionSeal.for_deployment(SECRET.encode(), DAY_S)
    alices = seal.mint(opening(HELLO), caller("alice"))
    assert alices is not None
    assert seal.open(alices, caller("alice")) == HELLO
    assert seal.open(alices, caller("bob")) is None
    assert seal.open(alices, None) is None
    seal.end(alices)
    assert seal.open(alices, caller("alice")) is None
    replica = SessionSeal.for_deployment(SECRET.encode(), DAY_S)
    assert replica.open(alices, caller("alice")) == HELLO  # told only through Temporal


def test_a_replica_that_would_negotiate_another_version_refuses_the_id() -> None:
    """Replicas of two SDKs mid-upgrade: the session's client initializes again rather
    than go on under a version it never agreed to."""
    seal = SessionSeal.for_deployment(SECRET.encode(), DAY_S)
    assert seal.open(seal.seal(HELLO, "2024-11-05", None), None) is None
    assert seal.open(seal.seal(HELLO, PROTOCOL, None), None) == HELLO


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"[" * 200_000, id="nested-too-deep"),
        pytest.param(b"{not json", id="not-json"),
        pytest.param(json.dumps({"jsonrpc": "2.0", "method": "initialize"}).encode(), id="no-id"),
        pytest.param(opening({"protocolVersion": PROTOCOL}), id="invalid-params"),
        pytest.param(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
            id="not-initialize",
        ),
    ],
)
def test_only_a_well_formed_initialize_gets_a_sealed_id(body: bytes) -> None:
    """Anything else goes to the SDK, which answers it as it always did."""
    assert SessionSeal.for_deployment(SECRET.encode(), DAY_S).mint(body, None) is None


@pytest.mark.parametrize(
    "params",
    [
        pytest.param(HUGE, id="issue-49"),
        pytest.param(
            {**HELLO, "capabilities": {"experimental": {"x": {"l": [[]] * 3000}}}},
            id="compressible-under-the-body-cap",
        ),
        pytest.param(
            {**HELLO, "capabilities": {"experimental": {"x": {"l": [[]] * 300}}}},
            id="under-the-byte-cap-over-the-value-cap",
        ),
    ],
)
def test_an_initialize_too_big_to_seal_gets_no_id(params: dict[str, Any]) -> None:
    """Each would seal into a small id (all compress well): the caps are on what is
    sealed, not on the id. Such a session is the SDK's own, on its front end."""
    body = opening(params)
    assert (len(body) > MAX_OPENING_BYTES) == (params is HUGE)
    assert SessionSeal.for_deployment(SECRET.encode(), DAY_S).mint(body, None) is None


def test_a_previous_releases_id_opens_through_the_bounded_path() -> None:
    clock = Clock()
    seal = SessionSeal(deployment_key(), DAY_S, clock)
    current = legacy_id(HELLO, issued=clock.now)
    huge = legacy_id(HUGE, issued=clock.now)
    assert len(huge) <= MAX_ID_CHARS  # what issue 49 sent: it passes every check in clear
    assert seal.open(current, None) == HELLO
    assert seal.open(huge, None) is None  # its decompression stops at the cap
    many = {**HELLO, "capabilities": {"experimental": {"x": {"l": [[]] * 300}}}}
    assert seal.open(legacy_id(many, issued=clock.now), None) is None  # small, too many values
    assert seal.open(legacy_id(HELLO, issued=clock.now, secret=OTHER_SECRET), None) is None
    clock.now += DAY_S + 1
    assert seal.open(current, None) is None  # cached, yet past this front end's age
    assert seal.open(legacy_id(HELLO, issued=clock.now - DAY_S - 1), None) is None
