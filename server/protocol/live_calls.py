"""What one front end holds of the sessions it serves, and the names any front end computes.

A 2025-xx session any front end serves (``sessions``) is served here by a local
MCP SDK session with an id of the SDK's own (``portable_sessions`` maps the two
at the HTTP seam). What the SDK numbers per process must not leave the process
under its own name, or two front ends speak of different things with one name:

- **a question a durable call asks** (``elicitation/create``, ...): the SDK numbers
  its server-to-client requests from 1 in each local session, so front ends A and
  B both ask ``id=1``. On the wire each such request carries instead an id of its
  own (``ft1.``...): its task, the input key, the round (a digest of the question
  as the task asked it and when), and a MAC under a key derived from the
  deployment's scope secret over all that, the session id and the caller. The
  front end that asked maps it back to the SDK's number; any other front end opens
  it and delivers the answer to the task, as ``tasks/update`` does.
- **a durable plain call**: its task id is derived from the session id, the
  caller and the request id (an HMAC under another derived key), so the front end
  that receives the call's ``notifications/cancelled`` names its task without
  asking anyone. A call with an ``Idempotency-Key`` keeps its keyed task id.

Without a scope secret the keys are this process's own: sessions, answers and
cancels then stay with the front end that holds them, as documented.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import os
from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fastmcp_temporal.server.core.wire import GetTaskResult

#: Marks a wire id of a durable call's question (a client's own ids are its own).
ANSWER_ID_PREFIX = "ft1."
#: Longest wire id opened: anything longer was not minted here (bounded work).
MAX_ANSWER_ID_CHARS = 2048
#: Sealed-to-local session pairs kept (the least recently used forgotten first: its
#: next request rebuilds a local session, the forgotten one idles out in the SDK).
MAX_SESSIONS_KEPT = 10_000
_ANSWER_LABEL = b"fastmcp-temporal/answer-ids/v1"
_CALL_LABEL = b"fastmcp-temporal/call-task-ids/v1"
_MAC_BYTES = 16


@dataclass(frozen=True)
class QuestionRef:
    """What a durable call's question is about: its task, input key and round."""

    task_id: str
    key: str
    round: str


@dataclass
class Ticket:
    """One question this front end is about to ask, until its answer is back."""

    ref: QuestionRef
    #: The id it went out under, once the HTTP seam rewrote it.
    wire_id: str | None = None
    #: The SDK's own id for it (what the answer is handed back to the SDK under).
    sdk_id: Any = None


def question_round(view: GetTaskResult, key: str) -> str:
    """The round ``key`` is asked in: a digest of the question and of when the task parked."""
    question = (view.input_requests or {}).get(key)
    material = json.dumps([key, question, view.last_updated_at], sort_keys=True, default=str)
    digest = hashlib.sha256(material.encode()).digest()[:12]
    return base64.urlsafe_b64encode(digest).decode()


@dataclass
class LiveCalls:
    """This process's table for one server: sessions, durable calls, questions in flight."""

    #: Keys for answer ids and call task ids (``keyed``); this process's own until then.
    _answer_key: bytes = field(default_factory=lambda: os.urandom(32))
    _call_key: bytes = field(default_factory=lambda: os.urandom(32))
    _local_of: OrderedDict[str, str] = field(default_factory=OrderedDict)
    _sealed_of: dict[str, str] = field(default_factory=dict)
    _calls_here: set[tuple[str, str]] = field(default_factory=set)
    _expected: dict[tuple[str, str], deque[Ticket]] = field(default_factory=dict)
    _asked: dict[tuple[str, str], Ticket] = field(default_factory=dict)
    #: The SDK's own ids of the questions out under wire ids, per local session.
    _renamed: set[tuple[str, str]] = field(default_factory=set)

    def keyed(self, scope_secret: bytes | None) -> None:
        """Derive the keys from the deployment's scope secret (``None``: this process's own)."""
        if scope_secret is None:
            self._answer_key, self._call_key = os.urandom(32), os.urandom(32)
        else:
            self._answer_key = hmac.new(scope_secret, _ANSWER_LABEL, hashlib.sha256).digest()
            self._call_key = hmac.new(scope_secret, _CALL_LABEL, hashlib.sha256).digest()

    # -- sessions --------------------------------------------------------------

    def local_session(self, sealed_id: str) -> str | None:
        """The SDK session serving ``sealed_id`` here, if any (now the most recently used)."""
        local_id = self._local_of.get(sealed_id)
        if local_id is not None:
            self._local_of.move_to_end(sealed_id)
        return local_id

    def sealed_session(self, local_id: str | None) -> str | None:
        """The sealed id a local SDK session serves, if it serves one."""
        return None if local_id is None else self._sealed_of.get(local_id)

    def pair(self, sealed_id: str, local_id: str) -> None:
        """From now on ``local_id`` serves ``sealed_id`` here."""
        self.unpair(sealed_id)
        self._local_of[sealed_id] = local_id
        self._sealed_of[local_id] = sealed_id
        while len(self._local_of) > MAX_SESSIONS_KEPT:
            self.unpair(next(iter(self._local_of)))

    def unpair(self, sealed_id: str) -> None:
        if (local_id := self._local_of.pop(sealed_id, None)) is not None:
            self._sealed_of.pop(local_id, None)

    # -- durable calls -----------------------------------------------------------

    @contextlib.contextmanager
    def holding(self, local_id: str | None, request_id: str) -> Iterator[None]:
        """While inside, this front end holds the call (its cancel is the SDK's to see)."""
        if local_id is None:
            yield
            return
        self._calls_here.add((local_id, request_id))
        try:
            yield
        finally:
            self._calls_here.discard((local_id, request_id))

    def holds(self, local_id: str | None, request_id: str) -> bool:
        return (local_id, request_id) in self._calls_here if local_id is not None else False

    def call_task_id(self, sealed_id: str, scope: str | None, request_id: str) -> str:
        """The task id of a durable call any front end of the deployment computes:
        192 bits of an HMAC of the session, the caller and the request id (as hex,
        as a keyed call's id)."""
        names = json.dumps([sealed_id, scope, request_id], separators=(",", ":"))
        return hmac.new(self._call_key, names.encode(), hashlib.sha256).hexdigest()[:48]

    # -- questions ---------------------------------------------------------------

    @contextlib.contextmanager
    def asking(self, local_id: str, request_id: str, ref: QuestionRef) -> Iterator[Ticket]:
        """While inside, the next server-to-client request on the call's stream is ``ref``."""
        ticket = Ticket(ref)
        self._expected.setdefault((local_id, request_id), deque()).append(ticket)
        try:
            yield ticket
        finally:
            waiting = self._expected.get((local_id, request_id))
            if waiting is not None:
                with contextlib.suppress(ValueError):
                    waiting.remove(ticket)
                if not waiting:
                    del self._expected[(local_id, request_id)]
            if ticket.wire_id is not None:
                self._asked.pop((local_id, ticket.wire_id), None)
                self._renamed.discard((local_id, str(ticket.sdk_id)))

    def expecting(self, local_id: str, request_id: str) -> bool:
        return (local_id, request_id) in self._expected

    def take(self, local_id: str, request_id: str, sdk_id: Any, wire_id: str) -> None:
        """The SDK sent the question ``asking`` announced, as ``sdk_id``; out as ``wire_id``."""
        ticket = self._expected[(local_id, request_id)].popleft()
        if not self._expected[(local_id, request_id)]:
            del self._expected[(local_id, request_id)]
        ticket.sdk_id, ticket.wire_id = sdk_id, wire_id
        self._asked[(local_id, wire_id)] = ticket
        self._renamed.add((local_id, str(sdk_id)))

    def next_ref(self, local_id: str, request_id: str) -> QuestionRef:
        return self._expected[(local_id, request_id)][0].ref

    def renamed(self, local_id: str | None, sdk_id: object) -> bool:
        """Whether the SDK's request ``sdk_id`` of that session went out under a wire id:
        the client never saw that id, so an answer naming it answers something else (an
        inline question of another front end, numbered alike) and must not complete it."""
        return local_id is not None and (local_id, str(sdk_id)) in self._renamed

    def asked_here(self, local_id: str | None, wire_id: str) -> Ticket | None:
        """The question this front end asked under ``wire_id`` in that session, if it did."""
        return None if local_id is None else self._asked.get((local_id, wire_id))

    # -- answer ids ----------------------------------------------------------------

    def answer_id(self, ref: QuestionRef, sealed_id: str, scope: str | None) -> str:
        """The wire id of ``ref``'s question in this session, for this caller."""
        payload = json.dumps([ref.task_id, ref.key, ref.round], separators=(",", ":")).encode()
        mac = self._answer_mac(payload, sealed_id, scope)
        return ANSWER_ID_PREFIX + _b64(payload) + "." + _b64(mac)

    def open_answer_id(self, wire_id: str, sealed_id: str, scope: str | None) -> QuestionRef | None:
        """The question a wire id names, if it was minted in this deployment for this
        session and caller and not altered; else ``None``."""
        if len(wire_id) > MAX_ANSWER_ID_CHARS or not wire_id.startswith(ANSWER_ID_PREFIX):
            return None
        encoded, _, encoded_mac = wire_id.removeprefix(ANSWER_ID_PREFIX).partition(".")
        payload, mac = _unb64(encoded), _unb64(encoded_mac)
        if payload is None or mac is None:
            return None
        if not hmac.compare_digest(mac, self._answer_mac(payload, sealed_id, scope)):
            return None
        task_id, key, round_ = json.loads(payload)  # sealed here: three strings
        return QuestionRef(task_id, key, round_)

    def _answer_mac(self, payload: bytes, sealed_id: str, scope: str | None) -> bytes:
        bound = json.dumps([sealed_id, scope], separators=(",", ":")).encode()
        message = len(payload).to_bytes(4, "big") + payload + bound
        return hmac.new(self._answer_key, message, hashlib.sha256).digest()[:_MAC_BYTES]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes | None:
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return data if _b64(data) == text else None
