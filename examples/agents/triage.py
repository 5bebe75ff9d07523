"""What the three agent tools share: the verdict, and the user's approval through ``ask``.

Workflow code (the sandbox re-imports it with each agent's module): ``approve``
asks the MCP client through the task's input machinery, so the question reaches
a host as an elicitation, and a client with the tasks extension as
``input_required``.
"""

from __future__ import annotations

import mcp_types
from pydantic import BaseModel

from fastmcp_temporal.workflows import ask

#: The ticket the examples triage, and the customer its reporter is.
TICKET = "login broken for ada@example.com"
CUSTOMER = "ada@example.com"


class Triage(BaseModel):
    ticket: str
    verdict: str
    approved: bool


def customer_plan_of(email: str) -> str:
    """The customer's plan (a stand-in for a CRM lookup)."""
    return "enterprise" if email.endswith("@example.com") else "free"


async def approve(ticket: str, verdict: str) -> Triage:
    """Ask the user whether to act on the agent's verdict."""
    answer = await ask(
        mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(
                message=f"The agent suggests {verdict!r}. Go ahead?",
                requested_schema={
                    "type": "object",
                    "properties": {"approve": {"type": "boolean"}},
                    "required": ["approve"],
                },
            )
        ),
        key="approve",
    )
    approved = (
        isinstance(answer, mcp_types.ElicitResult)
        and answer.action == "accept"
        and bool((answer.content or {}).get("approve"))
    )
    return Triage(ticket=ticket, verdict=verdict, approved=approved)
