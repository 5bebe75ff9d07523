"""The support desk: a second MCP server, in its own process, that the triage agent calls.

    python -m examples.orchestrator.desk_server --port 8011

One long **task** tool (``investigate``: works for a while, reporting progress,
and asks the user which environment is affected half-way) and three plain
tools answered at once. Its tasks run on the same embedded Temporal as the
triage server (same data directory), on its own task queue.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig

from examples.orchestrator.models import (
    CustomerHistory,
    Investigation,
    ServiceStatus,
    SimilarTickets,
)
from fastmcp_temporal import TemporalTasks

#: Seconds each half of the investigation takes (a stand-in for real work).
WORK_S = 1.0


async def investigate(ticket: str, component: str, ctx: Context) -> Investigation:
    """Investigate a ticket: read the logs, ask which environment, check it."""
    answer = (ctx.input_responses or {}).get("environment")
    if not isinstance(answer, mcp_types.ElicitResult):
        await ctx.report_progress(1, 3, f"reading the {component} logs")
        await asyncio.sleep(WORK_S)
        return mcp_types.InputRequiredResult(  # type: ignore[return-value]
            input_requests={
                "environment": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message=f"Which environment shows '{ticket}'?",
                        requested_schema={
                            "type": "object",
                            "properties": {
                                "environment": {
                                    "type": "string",
                                    "enum": ["production", "staging"],
                                }
                            },
                            "required": ["environment"],
                        },
                    )
                )
            }
        )
    environment = str((answer.content or {}).get("environment", "unknown"))
    await ctx.report_progress(2, 3, f"checking {component} in {environment}")
    await asyncio.sleep(WORK_S)
    return Investigation(
        component=component,
        environment=environment,
        findings=[
            f"{component}: error rate 4.2% in {environment} since 09:12",
            f"{component}: deploy 2026.12.01-3 rolled out at 09:10",
        ],
    )


def customer_history(email: str) -> CustomerHistory:
    """The customer's plan and open tickets."""
    return CustomerHistory(email=email, plan="enterprise", open_tickets=2)


def service_status(component: str) -> ServiceStatus:
    """Is the component healthy right now?"""
    return ServiceStatus(component=component, healthy=False, incident="INC-1042")


def similar_tickets(summary: str) -> SimilarTickets:
    """Recent tickets that read like this one."""
    return SimilarTickets(tickets=["T-881 login loops after deploy", "T-874 SSO timeouts"])


def build(**tasks_options: Any) -> FastMCP:
    """The desk; ``tasks_options`` go to ``TemporalTasks`` (e.g. its task queue)."""
    mcp = FastMCP("support desk")
    mcp.add_extension(TemporalTasks(**tasks_options))
    mcp.tool(task=TaskConfig(mode="required"))(investigate)
    for plain_tool in (customer_history, service_status, similar_tickets):
        mcp.tool(plain_tool)
    return mcp


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--task-queue", help="default: the embedded Temporal's queue for the desk")
    args = parser.parse_args()
    build(task_queue=args.task_queue).run(
        transport="http", host="127.0.0.1", port=args.port, show_banner=False, log_level="warning"
    )
