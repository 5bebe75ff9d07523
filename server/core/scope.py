"""Whose task it is, and how its workflow id says so without saying who.

A task belongs to its caller's *scope*: the access token's principal, or
``None`` for anonymous callers. The scope is part of the workflow id,
``mcp-<tag>-<taskId>``, so another caller's lookup names a workflow that does
not exist. The tag must not identify the caller to whoever sees workflow ids
(the Temporal UI, visibility queries, logs): it is an HMAC of the scope under
a server secret, so without the secret nobody can compute a user's tag and
list that user's tasks. Every front end of one deployment needs the same
secret (workers never compute tags).

Where the secret comes from, first match wins:

1. ``TemporalTasks(scope_secret=...)``;
2. ``FASTMCP_TEMPORAL_SCOPE_SECRET``;
3. the embedded default (no Temporal address): a file ``scope-secret`` in the
   embedded server's data dir, generated (mode 0600) on first start, so it
   lives as long as the tasks it tags;
4. none: the unkeyed tag of earlier releases (``sha256(scope)``), with a
   warning when the server authenticates callers. A front end never invents a
   per-process secret: its replicas and its next start would not find its tasks.

Tasks created before a secret was configured keep their unkeyed ids; a keyed
front end looks a task up under its keyed id, then under the unkeyed one, so
they stay readable by their owners until they expire.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
from pathlib import Path

from fastmcp.server.dependencies import get_access_token
from mcp.server.auth.provider import AccessToken, principal_components

from fastmcp_temporal.server.core.private_file import read_or_create
from fastmcp_temporal.server.core.settings import env_var

logger = logging.getLogger(__name__)

SCOPE_SECRET_ENV = env_var("scope_secret")
SECRET_FILE_NAME = "scope-secret"
ANONYMOUS_TAG = "anon"
#: Shorter secrets are guessable offline from one known (scope, tag) pair.
MIN_SECRET_BYTES = 16
_TAG_HEX_CHARS = 16


def task_scope() -> str | None:
    """The scope of the current caller: ``(client_id, iss, sub)`` as compact JSON, or ``None``.

    FastMCP's principal (``current_principal``: the key of ``UserSession`` and of
    request-state binding), except that a token verifier that puts ``sub`` only
    in the claims (``AccessToken.subject`` left ``None``) still separates its
    users: the subject falls back to ``claims["sub"]``, as ``fastmcp_tasks``
    does. Without that, every user of one client id would share one scope. JSON
    keeps the encoding injective (no delimiter a client id or subject could
    contain), and two issuers' users never share a scope.
    """
    token = get_access_token()
    return None if token is None else principal_scope(token)


def principal_scope(token: AccessToken) -> str:
    """``task_scope`` of the caller ``token`` authenticates (also read where no request runs)."""
    client_id, issuer, subject = principal_components(token)
    if subject is None:
        claimed = (token.claims or {}).get("sub")
        subject = str(claimed) if claimed else None
    return json.dumps([client_id, issuer, subject], separators=(",", ":"))


def unkeyed_tag(scope: str) -> str:
    """The tag of releases before the scope secret: linkable by anyone who knows the scope."""
    return hashlib.sha256(scope.encode()).hexdigest()[:_TAG_HEX_CHARS]


def scope_tag(scope: str | None, secret: bytes | None) -> str:
    """The workflow id's scope tag: keyed when there is a secret."""
    if scope is None:
        return ANONYMOUS_TAG
    if secret is None:
        return unkeyed_tag(scope)
    return hmac.new(secret, scope.encode(), hashlib.sha256).hexdigest()[:_TAG_HEX_CHARS]


def lookup_tags(scope: str | None, secret: bytes | None) -> list[str]:
    """Tags to look a task up under: the current one, then the unkeyed one of older tasks."""
    tags = [scope_tag(scope, secret)]
    if scope is not None and secret is not None:
        tags.append(unkeyed_tag(scope))
    return tags


def parse_secret(value: str, *, origin: str) -> bytes:
    """A configured secret as bytes; too short is a configuration error, said at startup."""
    secret = value.strip().encode()
    if len(secret) < MIN_SECRET_BYTES:
        raise ValueError(
            f"The scope secret from {origin} is too short ({len(secret)} bytes; at least "
            f'{MIN_SECRET_BYTES}). Generate one with: python -c "import secrets; '
            'print(secrets.token_urlsafe(32))"'
        )
    return secret


def resolve_secret(
    configured: bytes | None, *, embedded_data_dir: Path | None, warn: bool
) -> bytes | None:
    """Configured, else the embedded server's own, else none (unkeyed tags; ``warn``ed)."""
    if configured is not None:
        return configured
    if embedded_data_dir is not None:
        return embedded_secret(embedded_data_dir)
    if warn:
        logger.warning(
            "fastmcp-temporal: no scope secret (%s): workflow ids carry an unkeyed "
            "hash of the caller's principal, so anyone who sees them and knows a "
            "user's client id and subject can find that user's tasks",
            SCOPE_SECRET_ENV,
        )
    return None


def embedded_secret(data_dir: Path) -> bytes:
    """The embedded server's secret: read from its data dir, created there (0600) if absent."""
    path = data_dir / SECRET_FILE_NAME
    value, created = read_or_create(path, lambda: secrets.token_urlsafe(32))
    if created:
        logger.info("fastmcp-temporal: generated the scope secret in %s", path)
    return parse_secret(value, origin=str(path))
