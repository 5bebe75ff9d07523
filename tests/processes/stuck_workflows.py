"""Workflow tools as a newcomer gets them wrong (kept free of server set-up: the sandbox
re-imports it): one whose activity is left out of ``workflow_tool(..., activities=[...])``,
and one whose workflow task fails on every attempt, as a sync LangGraph router does."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy


@activity.defn
async def order_status(order: int) -> str:
    return f"order {order} shipped"


@workflow.defn
class OrderAgent:
    """Look up an order's status (its activity is the one a newcomer forgets to pass)."""

    @workflow.run
    async def run(self, order: int) -> str:
        return await workflow.execute_activity(
            order_status,
            order,
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=1)),
        )


def _route(state: dict[str, str]) -> str:
    return "tools" if state.get("pending") else "end"


@workflow.defn
class SyncRouterAgent:
    """Route as LangGraph runs a sync router: in an executor, which a workflow has not."""

    @workflow.run
    async def run(self, question: str) -> str:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, _route, {"pending": question})


@workflow.defn
class OrderDesk:
    """Hand the order to ``OrderAgent`` as a child workflow (its activity forgotten too)."""

    @workflow.run
    async def run(self, order: int) -> str:
        return await workflow.execute_child_workflow(
            OrderAgent.run, order, id=f"{workflow.info().workflow_id}-agent"
        )
