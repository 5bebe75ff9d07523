"""What the orchestrator and the support desk exchange (plain pydantic models)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Plan(BaseModel):
    """The triage plan the client's model writes (sampling), as JSON."""

    summary: str = Field(description="the problem in one line")
    component: str = Field(description="the service most likely at fault")
    severity: Literal["low", "medium", "high"]


class Investigation(BaseModel):
    """The support desk's long investigation (a task tool that asks the user once)."""

    component: str
    environment: str
    findings: list[str]


class CustomerHistory(BaseModel):
    email: str
    plan: str
    open_tickets: int


class ServiceStatus(BaseModel):
    component: str
    healthy: bool
    incident: str | None


class SimilarTickets(BaseModel):
    tickets: list[str]


class TriageReport(BaseModel):
    """The orchestrator's answer: the plan, what the desk found, and a verdict."""

    ticket: str
    plan: Plan
    planned_by: str
    investigation: Investigation
    customer: CustomerHistory
    status: ServiceStatus
    similar: list[str]
    verdict: str
