"""The server of the versioning tests: every leg says which worker process ran it.

Workers: ``fastmcp-temporal worker tests/processes/versioned_server.py`` with
``TEMPORAL_ADDRESS`` and ``VERSIONED_TASK_QUEUE`` (plus a deployment name and
build id). ``ask_locally`` is ``ask_then_answer`` for a front end that runs its
legs as local activities. ``build`` puts the same tools behind any extension, so a test's front
end validates calls exactly as the workers run them.
"""

from __future__ import annotations

import os

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig

from fastmcp_temporal import LegPolicy, TemporalTasks, workflow_tool
from tests.processes.agent_workflows import GreeterAgent, logged_step


async def ask_then_answer(ctx: Context) -> str:
    """Leg 1 parks the task on a question; leg 2 (after the answer) reports its process."""
    if not isinstance((ctx.input_responses or {}).get("go"), mcp_types.ElicitResult):
        return mcp_types.InputRequiredResult(  # type: ignore[return-value]
            input_requests={
                "go": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message=f"leg 1 ran in {os.getpid()}; go on?",
                        requested_schema={"type": "object", "properties": {}},
                    )
                )
            }
        )
    return f"leg 2 ran in {os.getpid()}"


async def whoami() -> str:
    return f"ran in {os.getpid()}"


def build(extension: TemporalTasks) -> FastMCP:
    mcp = FastMCP("versioned")
    mcp.add_extension(extension)
    mcp.tool(task=TaskConfig(mode="required"))(ask_then_answer)
    mcp.tool(name="ask_locally", task=TaskConfig(mode="required"))(ask_then_answer)
    mcp.tool(task=TaskConfig(mode="required"))(whoami)
    mcp.add_tool(workflow_tool(GreeterAgent, activities=[logged_step]))
    return mcp


mcp = build(
    TemporalTasks(
        task_queue=os.environ.get("VERSIONED_TASK_QUEUE", "versioned"),
        leg_policy=LegPolicy(heartbeat_timeout_s=2),
    )
)
