"""The fleet ``session_ids.py`` measures: front ends, a raw 2025-06-18 caller, the ids it builds.

Two front ends of one deployment (``session_front_end.py``, as separate processes:
bearer auth, no worker, one scope secret, callers' tokens encrypted), and optionally
a third of an earlier release; ``Wire``: one user's raw requests with
``Mcp-Session-Id``; the worst session the seal takes; ``s2.`` ids as the previous
release sealed them.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import itertools
import json
import os
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from fastmcp.server.auth import AccessToken
from support.processes import group, wait_for_port

from fastmcp_temporal.server.core.scope import principal_scope
from fastmcp_temporal.server.embedded.devserver import free_port
from fastmcp_temporal.server.protocol.session_seal import MAX_SEALED_BYTES, SessionSeal

ROOT = Path(__file__).resolve().parents[2]
SECRET = "the bench deployment's scope secret"
PROTOCOL = "2025-06-18"
HELLO = {
    "protocolVersion": PROTOCOL,
    "capabilities": {},
    "clientInfo": {"name": "b", "version": "1"},
}
ISSUE_49 = {"experimental": {"x": {"l": [[]] * 900_000}}}


def worst_capabilities() -> dict[str, Any]:
    """The largest ``[[]]`` list the seal takes (the most values per sealed byte)."""
    seal = SessionSeal(os.urandom(32), 60)
    length = MAX_SEALED_BYTES // 3
    while True:
        capabilities = {"experimental": {"x": {"l": [[]] * length}}}
        try:
            seal.seal({**HELLO, "capabilities": capabilities}, PROTOCOL, None)
        except ValueError:
            length -= 1
            continue
        return capabilities


def legacy_id(params: dict[str, Any], user: str) -> str:
    """An ``s2.`` id as the previous release sealed it, for ``user``."""
    key = hmac.new(SECRET.encode(), b"fastmcp-temporal/mcp-session/v2", hashlib.sha256).digest()
    token = AccessToken(token=f"user-{user}", client_id="app", scopes=[], claims={"sub": user})
    session = {"params": params, "version": PROTOCOL, "issued": time.time()}
    plain = zlib.compress(json.dumps(session, separators=(",", ":")).encode())
    nonce = os.urandom(12)
    sealed = nonce + AESGCM(key).encrypt(nonce, plain, principal_scope(token).encode())
    return "s2." + base64.urlsafe_b64encode(sealed).rstrip(b"=").decode()


class Wire:
    """One user's raw 2025-06-18 requests."""

    def __init__(self, http: httpx.AsyncClient, user: str) -> None:
        self.http, self.user, self._ids = http, user, itertools.count(1)

    def headers(self, session_id: str | None) -> dict[str, str]:
        headers = {
            "accept": "application/json, text/event-stream",
            "authorization": f"Bearer user-{self.user}",
        }
        if session_id is not None:
            headers |= {"mcp-session-id": session_id, "mcp-protocol-version": PROTOCOL}
        return headers

    async def initialize(self, url: str, capabilities: dict[str, Any] | None = None) -> str:
        params = {**HELLO, "capabilities": capabilities or {}}
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": "initialize"}
        answer = await self.http.post(
            url, json={**message, "params": params}, headers=self.headers(None)
        )
        assert answer.status_code == 200, answer.text
        session_id = answer.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.http.post(url, json=initialized, headers=self.headers(session_id))
        return session_id

    async def ping(self, url: str, session_id: str) -> int:
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": "ping"}
        answer = await self.http.post(url, json=message, headers=self.headers(session_id))
        return answer.status_code

    async def delete(self, url: str, session_id: str) -> int:
        return (await self.http.delete(url, headers=self.headers(session_id))).status_code


@contextlib.contextmanager
def front_ends(
    address: str, logs: Path, before_python: str | None
) -> Iterator[dict[str, tuple[str, int]]]:
    """A and B of this code; with ``before_python``, "before": B of that interpreter's."""
    env = {
        **os.environ,
        "FASTMCP_TEMPORAL_SCOPE_SECRET": SECRET,
        # Callers' tokens reach Temporal encrypted, as an authenticated deployment's must.
        "FASTMCP_TEMPORAL_ENCRYPTION_KEY": base64.b64encode(os.urandom(32)).decode(),
    }
    with group(env, logs) as started:
        fronts = {}
        pythons = {"a": sys.executable, "b": sys.executable}
        if before_python is not None:
            pythons["before"] = before_python
        for name, python in pythons.items():
            port = free_port()
            script = str(ROOT / "bench/support/session_front_end.py")
            pid = started.start(name, [python, script, address, str(port)])
            fronts[name] = (f"http://127.0.0.1:{port}/mcp", pid)
        for url, _ in fronts.values():
            wait_for_port(int(url.rsplit(":", 1)[1].split("/")[0]))
        yield fronts
