"""The workflow tool the recorded histories use (no server set-up: the sandbox re-imports it).

Replaying its ``-body`` history needs this exact class, so it lives here, next to
the histories, and changes only under the same rules as the task workflow.
"""

from __future__ import annotations

from datetime import timedelta

import mcp_types
from temporalio import activity, workflow
from temporalio.exceptions import ApplicationError

from fastmcp_temporal.workflows import ask, report_progress

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@activity.defn
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn
class AskingAgent:
    """Ask the client for a name, report progress around it, greet loudly."""

    @workflow.run
    async def run(self, salutation: str = "Hello") -> str:
        await report_progress("asking for a name", 1, 3)
        answer = await ask(
            mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message="Your name?", requested_schema=NAME_SCHEMA
                )
            ),
            key="name",
        )
        name = (answer.content or {}).get("name", "?")  # type: ignore[union-attr]
        await report_progress(f"greeting {name}", 2, 3)
        return await workflow.execute_activity(
            shout, f"{salutation}, {name}!", start_to_close_timeout=timedelta(seconds=30)
        )


@workflow.defn
class FailingAgent:
    """Report progress, then fail the way a workflow tool's own error does."""

    @workflow.run
    async def run(self) -> str:
        await report_progress("about to fail")
        raise ApplicationError("no luck today", non_retryable=True)
