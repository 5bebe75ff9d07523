"""2025-xx MCP sessions any front end serves: the session id carries the session.

On the handshake-era wire (``initialize``, protocol 2025-03-26 to 2025-11-25, as
Codex speaks it) a client sends the id ``initialize`` gave it (``Mcp-Session-Id``)
with every later request. The MCP SDK keeps the session in the memory of the
process that answered ``initialize``, so behind a load balancer the next request,
on another front end, got ``404 Session not found`` -- and so did every session of
a front end a deploy stopped. The MCP Python client does not start over after that
404: its session stays broken.

Here the id *is* the session: the ``initialize`` params the client sent (protocol
version, capabilities, client info) and the version the SDK negotiated for them,
sealed (``session_seal``: AES-256-GCM under a key every front end derives from the
scope secret, bound to the caller's principal and to when it was issued and the age
limit it was minted under, both in clear). A front end that gets an id it does not
serve opens it and rebuilds the session by replaying that ``initialize`` and
``notifications/initialized`` through its own app, so the session negotiates
there what it negotiated where it began, and FastMCP's ``on_initialize``
middleware runs for it there too (``portable_sessions``: the HTTP seam, an ASGI
middleware on this server's app, which keeps the SDK's own session id per
front end behind the sealed one). An id that is forged, altered, sealed under
another secret or sent by another caller opens to nothing: an unknown session,
``404``, as before; each request checks it, also on the front end that serves it.
So does an id past the age limit it carries (no id lives for ever: an anonymous
caller's is a bearer token), one a front end would negotiate another protocol
version for (replicas of different SDKs mid-upgrade: the client initializes again),
and one spelled any way but the one it was minted in. Whatever the id, checking it
costs bounded work, and a repeated one a cache lookup (``session_seal``). No store:
a random nonce makes every id unique.

``DELETE`` ends the session on the front end that receives it at once, and on every
other front end of the deployment within about a second (``session_logouts``: told
through Temporal, read in the background, never on a request's path).

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
  session id; ``Last-Event-ID`` resumes only where the events were stored.

Subscriptions need nothing: FastMCP serves no ``resources/subscribe``, and
``subscriptions/listen`` (2026-07-28) is a request of its own, without a session.

Without a scope secret (a Temporal address and no ``FASTMCP_TEMPORAL_SCOPE_SECRET``)
the key is this process's own: a session is served only by the front end that
started it, while it runs, as the SDK's own sessions are. An ``initialize`` too big
to seal (``session_seal.MAX_SEALED_BYTES``, or an id longer than ``MAX_ID_CHARS``:
headers proxies and servers accept) gets the SDK's own session.
"""

from __future__ import annotations

from fastmcp_temporal.server.protocol.session_seal import MAX_ID_CHARS, SessionSeal

__all__ = ["MAX_ID_CHARS", "SessionSeal"]
