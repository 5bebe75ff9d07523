"""A front end for the session tests.

    python -m tests.processes.session_server ADDRESS QUEUE PORT [auth]

A stateless front end (``run_worker=False``: the test runs the legs in its own
worker, from ``tools``) on ``127.0.0.1:PORT``, serving ``tools`` mounted. Its scope
secret is ``FASTMCP_TEMPORAL_SCOPE_SECRET`` from its environment, as in a
deployment. With ``auth``, callers authenticate with ``Bearer user-<name>``, the
user named only in the token's claims (``sub``), as many verifiers do.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.server.auth import AccessToken, TokenVerifier

from fastmcp_temporal import TemporalTasks

tools = FastMCP("session-tools")

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@tools.tool(task=True)
async def count_to(n: int, ctx: Context) -> str:
    """Reports each number as progress."""
    for number in range(1, n + 1):
        await ctx.report_progress(number, n, f"counted {number}")
    return f"counted to {n}"


@tools.tool(task=True)
async def greet(ctx: Context) -> str:
    """Asks the client for a name (on 2025-xx: an elicitation on the open call)."""
    answer = (ctx.input_responses or {}).get("name")
    if isinstance(answer, mcp_types.ElicitResult) and answer.content:
        return f"hello {answer.content['name']}"
    question = mcp_types.ElicitRequest(
        params=mcp_types.ElicitRequestFormParams(message="Your name?", requested_schema=NAME)
    )
    return mcp_types.InputRequiredResult(input_requests={"name": question})  # type: ignore[return-value]


NOTE = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}


@tools.tool(task=True)
async def confirm(item: str, ctx: Context) -> str:
    """Asks "Confirm <item>?" (on 2025-xx: an elicitation on the open call); says what it got."""
    answer = (ctx.input_responses or {}).get("confirm")
    if isinstance(answer, mcp_types.ElicitResult):
        return f"{item}: {answer.action} {(answer.content or {}).get('note')}"
    question = mcp_types.ElicitRequest(
        params=mcp_types.ElicitRequestFormParams(message=f"Confirm {item}?", requested_schema=NOTE)
    )
    return mcp_types.InputRequiredResult(input_requests={"confirm": question})  # type: ignore[return-value]


@tools.tool(task=True)
async def linger(marker: str, ctx: Context) -> str:
    """Writes ``marker`` once it runs, then reports progress until it is cancelled (10 min)."""
    Path(marker).write_text("running")
    for tick in range(6000):
        await ctx.report_progress(tick, None, "lingering")
        await asyncio.sleep(0.1)
    return "lingered"


@tools.tool
async def ask_inline(ctx: Context) -> str:
    """Not a task: asks inline (``ctx.elicit``), through the SDK of the front end it runs on."""
    answered = await ctx.elicit("Inline?", response_type=str)
    return f"inline: {answered.action} {getattr(answered, 'data', None)}"


@tools.tool
async def announce(uri: str, ctx: Context) -> str:
    """Sends ``notifications/resources/updated`` outside this request: to the GET stream."""
    await ctx.session.send_resource_updated(uri)
    return "announced"


class ClaimsOnlyVerifier(TokenVerifier):
    """``Bearer user-<name>``: every user of one client id, the user only in ``claims``."""

    async def verify_token(self, token: str) -> AccessToken | None:
        if not token.startswith("user-"):
            return None
        user = token.removeprefix("user-")
        return AccessToken(token=token, client_id="app", scopes=[], claims={"sub": user})


def main() -> None:
    address, task_queue, port = sys.argv[1:4]
    auth = ClaimsOnlyVerifier() if sys.argv[4:] == ["auth"] else None
    mcp = FastMCP("session-front-end", auth=auth)
    mcp.add_extension(TemporalTasks(address=address, task_queue=task_queue, run_worker=False))
    mcp.mount(tools)
    mcp.run(transport="http", host="127.0.0.1", port=int(port), show_banner=False)


if __name__ == "__main__":
    main()
