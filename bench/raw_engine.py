"""The raw-engine baseline the benchmarks compare against: plain temporalio, no MCP.

One workflow with one activity (and the same with a local activity), echoing
its input; a query stands in for a ``tasks/get`` poll. Kept free of the MCP
stack so the workflow sandbox imports nothing heavy; ``RUNNER`` passes through
what the benchmark scripts themselves import.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

RUNNER = SandboxedWorkflowRunner(
    restrictions=SandboxRestrictions.default.with_passthrough_modules(
        "fastmcp", "fastmcp_tasks", "fastmcp_temporal", "mcp", "mcp_types", "docket"
    )
)


@activity.defn
async def echo_activity(text: str) -> str:
    return text


@workflow.defn
class EchoWorkflow:
    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_activity(
            echo_activity, text, start_to_close_timeout=timedelta(seconds=30)
        )

    @workflow.query
    def status(self) -> str:
        return "working"


@workflow.defn
class EchoLocalWorkflow:
    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_local_activity(
            echo_activity, text, start_to_close_timeout=timedelta(seconds=30)
        )

    @workflow.query
    def status(self) -> str:
        return "working"
