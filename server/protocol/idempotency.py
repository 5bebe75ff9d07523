"""Idempotent task creation: the same key from the same caller names the same task.

A client whose ``tools/call`` answer was lost calls again with the same key and
gets the task the first call created -- same ``taskId``, the body run once --
instead of a second task. The key travels as

- the HTTP header ``Idempotency-Key`` on streamable HTTP (the IETF
  httpapi draft's header; its quoted form ``"abc"`` is read as ``abc``), or
- ``params._meta["io.github.fastmcp-temporal/idempotencyKey"]`` on any
  transport (both at once must agree).

A key is 1 to 255 visible ASCII characters (a UUID is a good one); anything
else is ``-32602``. It only matters for a call that becomes a task.

How: the task id is *derived* from the key -- ``HMAC(scope secret, (task queue,
caller, key))`` -- so the task's workflow id ``mcp-<scope tag>-<taskId>`` is the
same for every retry, and Temporal's workflow-id uniqueness does the rest: a
second start with that id fails (``REJECT_DUPLICATE`` / ``FAIL``), on every
front end, and the existing task is answered instead. The task's memo keeps a
digest (HMAC) of tool, version and arguments -- never the arguments in clear --
so a retry is compared without a worker: a different call under a used key is
``-32602`` naming the conflict.

Whose key: an authenticated caller's keys belong to its principal (the task
scope, ``server.core.scope``): another principal's identical key derives another id
in another scope, creates its own task and learns nothing. Anonymous callers
have no identity to scope by: their keys belong to the ``Mcp-Session-Id`` they
send, if any, else to all anonymous callers -- then, like an anonymous task id,
the key is a bearer secret (use a random one). A durable synchronous call
(``server.protocol.sync_calls``) is the exception: its key is the only handle its
client has on the task, and a 2025-11-25 session lives in one front end, so a key
bound to it could never reattach after that front end died -- the case the key
is for. Its anonymous keys belong to all anonymous callers on both wires.

For how long: as long as its task is readable (its TTL; a finished task too).
After that the key is free again and the same call starts a new task -- under
the same id, whose old task no longer exists for anyone.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import Any

from fastmcp.server.context import Context
from fastmcp.server.dependencies import get_http_headers
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionResponse

from fastmcp_temporal.client_wire import IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_META
from fastmcp_temporal.server.core.wire import CreateTaskResult, invalid_params
from fastmcp_temporal.server.tasks.engine import TaskEngine, workflow_id_for
from fastmcp_temporal.server.tasks.task_records import describe_raw

#: The task's memo entry with the digest of the call that created it.
REQUEST_DIGEST_MEMO = "mcp_request_digest"
MAX_KEY_CHARS = 255
_KEY = re.compile(rf"[\x21-\x7e]{{1,{MAX_KEY_CHARS}}}")
_SESSION_HEADER = "mcp-session-id"
#: Keys the derivation when the deployment has no scope secret.
_UNKEYED = b"fastmcp-temporal/idempotency"
_SHOWN_KEY_CHARS = 40


@dataclass(frozen=True)
class KeyedCall:
    """A ``tools/call`` with a key: the task id it names, and what it asks for."""

    key: str
    task_id: str
    workflow_id: str
    digest: str

    @property
    def memo(self) -> dict[str, str]:
        return {REQUEST_DIGEST_MEMO: self.digest}


def requested_key(context: Context) -> str | None:
    """The request's idempotency key, from ``_meta`` or the header; ``-32602`` if malformed."""
    request_context = context.request_context
    meta = (request_context.meta if request_context is not None else None) or {}
    header = get_http_headers(include_all=True).get(IDEMPOTENCY_KEY_HEADER.lower())
    if header is not None:
        header = header.strip()
        if len(header) >= 2 and header.startswith('"') and header.endswith('"'):
            header = header[1:-1]  # the draft's sf-string form
        _check(header, f"The {IDEMPOTENCY_KEY_HEADER} header")
    if IDEMPOTENCY_KEY_META not in meta:
        return header
    from_meta = meta[IDEMPOTENCY_KEY_META]
    _check(from_meta, f"_meta[{IDEMPOTENCY_KEY_META!r}]")
    if header is not None and header != from_meta:
        raise invalid_params(
            f"The {IDEMPOTENCY_KEY_HEADER} header and _meta[{IDEMPOTENCY_KEY_META!r}] "
            "name different keys; send one, or the same in both"
        )
    return from_meta


def _check(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise invalid_params(f"{where} must be a string (got {type(value).__name__})")
    if not _KEY.fullmatch(value):
        raise invalid_params(
            f"{where} must be 1 to {MAX_KEY_CHARS} visible ASCII characters "
            f"(got {len(value)} characters); a UUID is a good key"
        )


def keyed_call(
    engine: TaskEngine,
    context: Context,
    *,
    scope: str | None,
    tool_name: str,
    tool_version: str | None,
    arguments: dict[str, Any],
    session_bound: bool = True,
) -> KeyedCall | None:
    """The call's key, task id and digest; ``None`` without a key. ``session_bound``:
    an anonymous caller's key belongs to its ``Mcp-Session-Id`` (not for sync calls)."""
    key = requested_key(context)
    if key is None:
        return None
    session = None
    if scope is None and session_bound:
        session = get_http_headers(include_all=True).get(_SESSION_HEADER)
    secret = engine.scope_secret or _UNKEYED
    names = _canonical([engine.task_queue, scope, session, key])
    task_id = _mac(secret, b"task-id", names)[:48]  # 192 bits, as a minted id
    call = _canonical([tool_name, tool_version, arguments])
    return KeyedCall(
        key=key,
        task_id=task_id,
        workflow_id=workflow_id_for(task_id, scope, engine.scope_secret),
        digest=_mac(secret, b"call", call),
    )


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()


def _mac(secret: bytes, purpose: bytes, message: bytes) -> str:
    return hmac.new(secret, purpose + b"\0" + message, hashlib.sha256).hexdigest()


async def existing_task(
    engine: TaskEngine, call: KeyedCall, scope: str | None
) -> tuple[CreateTaskResult | None, bool]:
    """``(the key's task, whether its workflow exists)``.

    ``(None, False)``: the key is new. ``(None, True)``: its task has expired,
    the key is free again. A live task created by another call is ``-32602``.
    """
    raw = await describe_raw(engine.client, call.workflow_id, timeout=engine.query_timeout)
    if raw is None:
        return None, False
    try:
        task = await engine.get(call.task_id, scope)
    except MCPError as err:
        if err.code != INVALID_PARAMS:
            raise
        return None, True  # expired: gone for clients, so free for a new call
    if await _recorded_digest(engine, raw) != call.digest:
        shown = call.key if len(call.key) <= _SHOWN_KEY_CHARS else call.key[:_SHOWN_KEY_CHARS] + "…"
        raise invalid_params(
            f"Idempotency key conflict: {shown!r} already names a task created by a different "
            "call (another tool, version or arguments). Use a new key for a new call."
        )
    return (
        CreateTaskResult(
            task_id=task.task_id,
            status=task.status,
            status_message=task.status_message,
            created_at=task.created_at,
            last_updated_at=task.last_updated_at,
            ttl_ms=task.ttl_ms,
            poll_interval_ms=task.poll_interval_ms,
        ),
        True,
    )


async def _recorded_digest(engine: TaskEngine, raw: DescribeWorkflowExecutionResponse) -> Any:
    payload = raw.workflow_execution_info.memo.fields.get(REQUEST_DIGEST_MEMO)
    if payload is None:
        return None
    (digest,) = await engine.client.data_converter.decode([payload], [str])
    return digest
