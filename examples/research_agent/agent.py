"""A research agent written as a Temporal workflow, served as one MCP task tool.

Plan, search (an activity per query), ask the user to approve the plan
(elicitation), write the report (an activity). Every step is durable: a worker
crash between steps resumes after the last finished one, and the Temporal UI
shows each step as it happens.

The workflow lives in its own module, free of server set-up, as Temporal
recommends: the workflow sandbox re-imports it.
"""

from __future__ import annotations

from datetime import timedelta

import mcp_types
from pydantic import BaseModel
from temporalio import activity, workflow

from fastmcp_temporal.workflows import ask, caller, report_progress


class Report(BaseModel):
    topic: str
    requested_by: str | None
    findings: list[str]
    summary: str


@activity.defn
async def search(query: str) -> str:
    """Stand-in for a real search API: deterministic so the example runs offline."""
    activity.heartbeat()
    return f"{query}: {len(query) * 7} results, top hit '{query.title()} explained'"


@activity.defn
async def write_report(topic: str, findings: list[str]) -> str:
    return f"{len(findings)} sources on {topic!r}; the most cited: {findings[0]}"


def plan_queries(topic: str, depth: int) -> list[str]:
    return [f"{topic} {angle}" for angle in ("overview", "history", "open problems")][:depth]


# --8<-- [start:workflow]
@workflow.defn
class ResearchAgent:
    """Research a topic: plan, search, get the plan approved, write a report."""

    @workflow.run
    async def run(self, topic: str, depth: int = 3) -> Report:
        queries = plan_queries(topic, depth)
        await report_progress(f"planned {len(queries)} searches")
        approval = await ask(
            mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message=f"Search for: {', '.join(queries)}?",
                    requested_schema={
                        "type": "object",
                        "properties": {"approve": {"type": "boolean"}},
                        "required": ["approve"],
                    },
                )
            ),
            key="approve_plan",
        )
        approved = (
            isinstance(approval, mcp_types.ElicitResult)
            and approval.action == "accept"
            and bool((approval.content or {}).get("approve"))
        )
        if not approved:
            return Report(
                topic=topic,
                requested_by=caller().subject,
                findings=[],
                summary="plan rejected",
            )
        findings = []
        for number, query in enumerate(queries, start=1):
            await report_progress(f"searching {number}/{len(queries)}: {query}")
            findings.append(
                await workflow.execute_activity(
                    search,
                    query,
                    start_to_close_timeout=timedelta(seconds=30),
                    heartbeat_timeout=timedelta(seconds=10),
                )
            )
        await report_progress("writing the report")
        summary = await workflow.execute_activity(
            write_report, args=[topic, findings], start_to_close_timeout=timedelta(seconds=30)
        )
        return Report(
            topic=topic, requested_by=caller().subject, findings=findings, summary=summary
        )


# --8<-- [end:workflow]
