"""A demo FastMCP server whose task tools run on an embedded Temporal.

    ./dev demo            # http://127.0.0.1:8000/mcp, Temporal Web UI URL in the log

Every ``task=True`` tool below becomes a Temporal workflow when a client opts
in to the tasks extension (a FastMCP ``Client`` with
``fastmcp_temporal.client.TasksClientExtension`` does). Open the Web UI to
watch them: one workflow per task, one activity per leg, the tool's name as
the activity type.
"""

from __future__ import annotations

import argparse
import asyncio
import logging

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig

from fastmcp_temporal import TemporalTasks

mcp = FastMCP("fastmcp-temporal demo")
mcp.add_extension(TemporalTasks())


@mcp.tool(task=True)
async def crunch(steps: int = 5, ctx: Context | None = None) -> str:
    """Work through `steps` one-second steps, reporting progress as it goes."""
    for step in range(1, steps + 1):
        await asyncio.sleep(1)
        if ctx is not None:
            await ctx.report_progress(step, steps, f"step {step}/{steps}")
    return f"crunched {steps} steps"


# --8<-- [start:delete_file]
@mcp.tool(task=TaskConfig(mode="required"))
async def delete_file(filename: str, ctx: Context) -> str:
    """Ask the user to confirm, then (pretend to) delete `filename`."""
    answer = (ctx.input_responses or {}).get("confirm")
    if not isinstance(answer, mcp_types.ElicitResult):
        return mcp_types.InputRequiredResult(  # type: ignore[return-value]
            input_requests={
                "confirm": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message=f"Really delete {filename}?",
                        requested_schema={
                            "type": "object",
                            "properties": {"confirm": {"type": "boolean"}},
                            "required": ["confirm"],
                        },
                    )
                )
            }
        )
    if answer.action == "accept" and (answer.content or {}).get("confirm"):
        return f"deleted {filename}"
    return f"kept {filename}"


# --8<-- [end:delete_file]


@mcp.tool(task=True)
async def flaky() -> str:
    """Fail like real code does: the task completes with an isError result."""
    raise RuntimeError("the upstream service is down")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    mcp.run(transport="http", host=args.host, port=args.port)


if __name__ == "__main__":
    main()
