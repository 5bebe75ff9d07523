"""An authenticated server whose task tool checks the caller it sees, for credentials tests.

CREDS_TOKEN=t CREDS_API_KEY=k fastmcp-temporal worker tests/processes/creds_server.py \
    --data-dir <the front end's>

The tool answers whether the caller's token and ``X-Api-Key`` header reached it,
never their values: the answer is stored in the task's history, which the tests
search for them.
"""

from __future__ import annotations

import os
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.dependencies import get_access_token, get_http_headers

from fastmcp_temporal import TemporalTasks

TASK_QUEUE = "creds"


def build(tasks: TemporalTasks, *, token: str, api_key: str) -> FastMCP:
    verifier = StaticTokenVerifier(
        tokens={token: {"client_id": "app", "sub": "ada", "scopes": ["read"]}}
    )
    mcp = FastMCP("creds", auth=verifier)
    mcp.add_extension(tasks)

    @mcp.tool(task=True)
    async def whoami() -> dict[str, Any]:
        seen = get_access_token()
        headers = get_http_headers(include_all=True)
        return {
            "token_ok": seen is not None and seen.token == token,
            "client_id": seen.client_id if seen is not None else None,
            "api_key_ok": headers.get("x-api-key") == api_key,
            "tenant": headers.get("x-tenant"),
            "worker_pid": os.getpid(),
        }

    return mcp


mcp = build(
    TemporalTasks(task_queue=TASK_QUEUE, ui=False),
    token=os.environ.get("CREDS_TOKEN", "creds-token"),
    api_key=os.environ.get("CREDS_API_KEY", "creds-api-key"),
)
