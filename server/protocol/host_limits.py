"""What the server knows of the MCP hosts that call it: who they are, when they give up.

A host (the app a person talks to, and its MCP client) bounds how long it waits for
one ``tools/call``. Measured on eight hosts (issue 51; ``docs/guides/sync-clients.md``
keeps the table current):

| host | limit on one tool call | progress extends it? | when it fires |
|---|---|---|---|
| Claude Code | idle 300 s; hard ~27.8 h | idle: yes | stream closed, no cancel |
| Codex | ``tool_timeout_sec`` | no | ``notifications/cancelled`` |
| Gemini CLI | per-server ``timeout``, 600 s | no | cancelled, "Request timed out" |
| Qwen Code | per-server ``timeout``, 600 s; idle 300 s | hard: no | cancelled, "SdkError: ..." |
| opencode | per-server ``timeout``, 60 s idle | yes | cancelled, -32001 "Request timed out" |
| Copilot CLI | per-server ``timeout`` | yes | stream closed, no cancel |
| Cline CLI | per-server ``timeout``, 60 s; no ``progressToken`` | no | cancelled |
| Continue CLI | the SDK's 60 s | no | cancelled |

Two things follow, and both live here so that one module says what the server
assumes about hosts:

- **A timeout is not a person's decision.** ``is_host_timeout`` reads the
  ``reason`` of a ``notifications/cancelled``: the wordings above (the TypeScript
  SDK's ``McpError``/``SdkError`` "Request timed out", an ``AbortError`` "did not
  respond within ...", Codex's own) mean the host stopped waiting, so the task
  is detached, not cancelled (``peer_cancels``). No reason, or any other, is a
  person's cancel.
- **A hard limit is known in advance.** For the hosts whose limit progress does not
  extend, ``hard_limit_s`` gives it by the ``clientInfo.name`` the host sends
  (at ``initialize`` on 2025-xx, in each request's ``_meta`` on 2026-07-28); the
  waiting call answers ``answer_within_s`` before it fires (``early_answers``).
  The server setting ``host_limits`` (``{client name prefix: seconds}``, ``"*"``
  for any other client, ``0`` for none) overrides and extends the table: a
  Gemini CLI user who set ``timeout: 1800000`` says ``{"gemini-cli": 1800}``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastmcp.server.context import Context
from mcp_types import CLIENT_INFO_META_KEY

#: ``host_limits``' key for every client the table and the setting do not name.
ANY_CLIENT = "*"


@dataclass(frozen=True)
class HardLimit:
    """A host whose limit on one tool call progress does not extend, by default settings."""

    host: str
    #: ``clientInfo.name`` prefixes, lowercase (Gemini CLI and Qwen Code append the server's name).
    client_names: tuple[str, ...]
    seconds: float


#: The hosts whose default limit is hard, with the client names they send.
HARD_LIMITS = (
    HardLimit("Cline CLI", ("cline",), 60),
    HardLimit("Continue CLI", ("continue-cli-client",), 60),
    HardLimit("Gemini CLI", ("gemini-cli-mcp-client",), 600),
    HardLimit("Qwen Code", ("qwen-code-mcp-client", "qwen-cli-mcp-client"), 600),
)

#: Codex's (the Rust SDK ``rmcp``'s) reason for every call it drops: at its ``tool_timeout_sec``
#: and when its user interrupts the turn alike (Codex 0.171.0, measured). The server cannot
#: tell the two apart; it takes it for a timeout, the common case (every Codex call longer
#: than the limit ends so): the work goes on for its TTL instead of being thrown away, and a
#: person who wants it stopped has ``tasks/cancel`` (``fastmcp-temporal tasks cancel``).
RMCP_DROPPED = "MCP request cancelled by caller"
#: A ``notifications/cancelled`` reason saying the host stopped waiting, as each host words it:
#: the TypeScript SDK (Gemini CLI, Qwen Code, opencode, Cline, Continue) ``String(error)`` of
#: its ``McpError(-32001, "Request timed out")`` or ``SdkError``; Qwen Code's idle
#: ``AbortError: ... did not respond within 12000ms idle timeout``; the Python SDK's
#: ``timed out after 30.0s``; Codex's ``RMCP_DROPPED``.
_TIMEOUT_REASON = re.compile(
    rf"timed[ _-]?out|time[ _-]?out|did not respond within|^{re.escape(RMCP_DROPPED)}$",
    re.IGNORECASE,
)


def is_host_timeout(reason: str | None) -> bool:
    """Whether a cancel's ``reason`` says the host gave up waiting (not a person's decision)."""
    return reason is not None and _TIMEOUT_REASON.search(reason) is not None


def client_name(context: Context) -> str | None:
    """The calling host's ``clientInfo.name``: the request's (2026-07-28), else the session's."""
    request_context = context.request_context
    meta = request_context.meta if request_context is not None else None
    info: Any = meta.get(CLIENT_INFO_META_KEY) if meta else None
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        return info["name"]
    try:
        declared = context.session.client_params.client_info  # type: ignore[union-attr]
    except (RuntimeError, AttributeError):
        return None
    name = getattr(declared, "name", None)
    return name if isinstance(name, str) else None


def hard_limit_s(name: str | None, overrides: Mapping[str, float]) -> float | None:
    """The hard limit of the host called ``name``: ``overrides`` first (the longest matching
    prefix), then the table, then ``overrides["*"]``; ``None`` (or ``0``) for none."""
    lowered = (name or "").lower()
    matching = [
        prefix
        for prefix in overrides
        if prefix != ANY_CLIENT and lowered.startswith(prefix.lower())
    ]
    if name is not None and matching:
        seconds: float | None = overrides[max(matching, key=len)]
    elif name is not None and (known := _known(lowered)) is not None:
        seconds = known.seconds
    else:
        seconds = overrides.get(ANY_CLIENT)
    return seconds if seconds else None


def _known(lowered: str) -> HardLimit | None:
    return next(
        (limit for limit in HARD_LIMITS if any(map(lowered.startswith, limit.client_names))),
        None,
    )


def answer_within_s(limit_s: float) -> float:
    """When to answer a call whose host gives up at ``limit_s``: a tenth earlier, at least
    3 s (the answer must cross the network and the host's own bookkeeping first), and never
    before half of it."""
    return max(limit_s - max(3.0, limit_s / 10), limit_s / 2)


def check_host_limits(limits: Mapping[str, float]) -> dict[str, float]:
    """``host_limits`` as given, checked: names non-empty, seconds not negative."""
    checked: dict[str, float] = {}
    for name, seconds in limits.items():
        if not isinstance(name, str) or not name.strip():
            raise ValueError("host_limits: each key is a clientInfo name prefix, or '*'")
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise ValueError(f"host_limits[{name!r}] must be a number of seconds, 0 or more")
        checked[name.strip()] = float(seconds)
    return checked
