"""The server of the multi-process test, run as users run theirs.

Front ends: ``fastmcp run tests/processes/replica_server.py --transport http``
with ``FASTMCP_TEMPORAL_RUN_WORKER=false``; workers: ``fastmcp-temporal worker
tests/processes/replica_server.py``. Both find Temporal in ``TEMPORAL_ADDRESS``.
The tool asks for approval, then records which process runs its second leg and
waits until the test releases it (or cancels the task).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig

from fastmcp_temporal import LegPolicy, TemporalTasks

mcp = FastMCP("replicas")
mcp.add_extension(
    TemporalTasks(
        task_queue=os.environ["REPLICA_TASK_QUEUE"],
        # The test drains a worker (SIGTERM: it hands the leg back itself) and kills
        # none: a short timeout would only let a starved worker's leg be taken for
        # lost and run again on a loaded machine.
        leg_policy=LegPolicy(heartbeat_timeout_s=60),
    )
)


@mcp.tool(task=TaskConfig(mode="required"))
async def approve_then_work(item: str, marker_dir: str, ctx: Context) -> str:
    answer = (ctx.input_responses or {}).get("approve")
    if not isinstance(answer, mcp_types.ElicitResult):
        return mcp_types.InputRequiredResult(  # type: ignore[return-value]
            input_requests={
                "approve": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message=f"Approve {item}?",
                        requested_schema={
                            "type": "object",
                            "properties": {"ok": {"type": "boolean"}},
                        },
                    )
                )
            }
        )
    runs = Path(marker_dir)
    (runs / f"leg-{os.getpid()}-{uuid.uuid4().hex}").write_text("")
    while not (runs / "release").exists():
        await asyncio.sleep(0.05)
    return f"{item} done in {os.getpid()}"
