"""A front end of a fleet for ``session_ids.py``: bearer auth, no worker, one scope secret.

    python bench/support/session_front_end.py ADDRESS PORT

A stateless front end (``run_worker=False``) of a deployment on Temporal at
``ADDRESS``, on ``127.0.0.1:PORT``; its scope secret is ``FASTMCP_TEMPORAL_SCOPE_SECRET``
from its environment. Callers authenticate with ``Bearer user-<name>`` (the user only
in the token's claims, as many verifiers do).
"""

from __future__ import annotations

import sys

from fastmcp import FastMCP
from fastmcp.server.auth import AccessToken, TokenVerifier

from fastmcp_temporal import TemporalTasks


class ClaimsOnlyVerifier(TokenVerifier):
    async def verify_token(self, token: str) -> AccessToken | None:
        if not token.startswith("user-"):
            return None
        user = token.removeprefix("user-")
        return AccessToken(token=token, client_id="app", scopes=[], claims={"sub": user})


def main() -> None:
    address, port = sys.argv[1:3]
    mcp = FastMCP("bench-sessions", auth=ClaimsOnlyVerifier())
    mcp.add_extension(TemporalTasks(address=address, run_worker=False))
    mcp.run(transport="http", host="127.0.0.1", port=int(port), show_banner=False)


if __name__ == "__main__":
    main()
