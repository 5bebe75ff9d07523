"""The triage agent: a workflow tool that plans with the client's model and works the desk.

1. **Plan** with the model of the MCP client that called us (``sample``): the
   server has no model and no key. The plan is JSON, validated as ``Plan``.
2. **Investigate** on the support desk, another MCP server: its long
   ``investigate`` task (``remote("desk").call_tool``), whose question to the
   user reaches *our* client through our own task; and, at the same time, its
   three plain tools in parallel (``asyncio.gather``).
3. **Report**: a structured ``TriageReport``.

Every step is durable: the model's answer and the user's answer are signals
in history, each remote call an activity, the desk's task id recorded before
anything waits on it. Kept free of server set-up: the sandbox re-imports it.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

import mcp_types
from pydantic import BaseModel, ValidationError
from temporalio import workflow
from temporalio.exceptions import ApplicationError

from examples.orchestrator.models import (
    CustomerHistory,
    Investigation,
    Plan,
    ServiceStatus,
    SimilarTickets,
    TriageReport,
)
from fastmcp_temporal.workflows import remote, report_progress, sample

PLANNER_PROMPT = (
    "You triage support tickets. Answer with JSON only, of this shape: "
    '{"summary": str, "component": str, "severity": "low" | "medium" | "high"}'
)
_Model = TypeVar("_Model", bound=BaseModel)


@workflow.defn
class TriageAgent:
    """Triage a support ticket: plan with your model, investigate on the support desk, report."""

    @workflow.run
    async def run(self, ticket: str, customer_email: str) -> TriageReport:
        planned = await sample(
            f"Ticket from {customer_email}: {ticket}",
            system_prompt=PLANNER_PROMPT,
            max_tokens=300,
            temperature=0,
            key="plan",
        )
        try:
            plan = Plan.model_validate_json(planned.text)
        except ValidationError as err:
            raise ApplicationError(f"The model's plan is not valid: {err}") from None
        await report_progress(f"plan: {plan.component} ({plan.severity}); asking the desk")

        desk = remote("desk")
        investigation, customer, status, similar = await asyncio.gather(
            desk.call_tool("investigate", {"ticket": ticket, "component": plan.component}),
            desk.call_tool("customer_history", {"email": customer_email}),
            desk.call_tool("service_status", {"component": plan.component}),
            desk.call_tool("similar_tickets", {"summary": plan.summary}),
        )
        return _report(
            ticket,
            plan,
            planned_by=planned.model,
            investigation=_structured(investigation, Investigation),
            customer=_structured(customer, CustomerHistory),
            status=_structured(status, ServiceStatus),
            similar=_structured(similar, SimilarTickets),
        )


def _structured(result: mcp_types.CallToolResult, model: type[_Model]) -> _Model:
    """A desk tool's structured result; its ``isError`` result ends the triage with its text."""
    if result.is_error:
        text = " ".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))
        raise ApplicationError(f"The support desk failed: {text}")
    content: Any = result.structured_content
    return model.model_validate(content)


def _report(
    ticket: str,
    plan: Plan,
    *,
    planned_by: str,
    investigation: Investigation,
    customer: CustomerHistory,
    status: ServiceStatus,
    similar: SimilarTickets,
) -> TriageReport:
    if not status.healthy and investigation.environment == "production":
        verdict = (
            f"page the {plan.component} on-call: {status.incident} is live in production; "
            f"{customer.plan} customer"
        )
    else:
        verdict = f"queue for {plan.component} ({plan.severity})"
    return TriageReport(
        ticket=ticket,
        plan=plan,
        planned_by=planned_by,
        investigation=investigation,
        customer=customer,
        status=status,
        similar=similar.tickets,
        verdict=verdict,
    )
