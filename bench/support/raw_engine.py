"""The raw-engine baseline the benchmarks compare against: plain temporalio, no MCP.

One workflow with one activity (or, with ``local=True``, one local activity),
echoing its input; its ``status`` query stands in for a ``tasks/get`` poll (``working``
until the activity returned, then ``completed``). Kept free of the MCP
stack so the workflow sandbox imports nothing heavy; ``RUNNER`` passes through
what the benchmark scripts themselves import.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

RUNNER = SandboxedWorkflowRunner(
    restrictions=SandboxRestrictions.default.with_passthrough_modules(
        "fastmcp", "fastmcp_tasks", "fastmcp_temporal", "mcp", "mcp_types", "docket", "beartype"
    )
)


@activity.defn
async def echo_activity(text: str) -> str:
    return text


@workflow.defn
class EchoWorkflow:
    """Echo ``text`` through one activity, or through one local activity (``local``)."""

    def __init__(self) -> None:
        self.done = False

    @workflow.run
    async def run(self, text: str, local: bool = False) -> str:
        timeout = timedelta(seconds=30)
        if local:
            result = await workflow.execute_local_activity(
                echo_activity, text, start_to_close_timeout=timeout
            )
        else:
            result = await workflow.execute_activity(
                echo_activity, text, start_to_close_timeout=timeout
            )
        self.done = True
        return result

    @workflow.query
    def status(self) -> str:
        return "completed" if self.done else "working"
