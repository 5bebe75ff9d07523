"""Idempotency: a client's retry of the same logical call gets the same task.

The key rides in the call's ``_meta``; a second ``tools/call`` with it (a
retry after a lost answer) returns the task the first one created.
"""

# --8<-- [start:call]
import uuid

from fastmcp import Client

from fastmcp_temporal import IDEMPOTENCY_KEY_META
from fastmcp_temporal.client import ToolTask, call_tool_task


async def start_crunch(client: Client, key: str | None = None) -> ToolTask:
    key = key or str(uuid.uuid4())  # once per logical call, kept across retries
    return await call_tool_task(
        client, "crunch", {"dataset": "sales.csv"}, meta={IDEMPOTENCY_KEY_META: key}
    )


# --8<-- [end:call]
