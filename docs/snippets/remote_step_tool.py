"""Calling other MCP servers from a function tool: ``remote_step``.

The remote call is a ``Steps`` step; the connection ``search`` is the worker's.
"""

import os

from fastmcp import Context, FastMCP

# --8<-- [start:import]
from fastmcp_temporal import RemoteServer, Steps, TemporalTasks, remote_step

# --8<-- [end:import]
search = RemoteServer.http("https://search.example/mcp", bearer_token=os.environ["SEARCH_TOKEN"])
mcp = FastMCP("summaries")
mcp.add_extension(TemporalTasks(remote_servers={"search": search}))


# --8<-- [start:tool]
@mcp.tool(task=True)
async def summarize(topic: str, ctx: Context) -> str:
    steps = Steps(ctx)
    report = await remote_step(steps, "search", "deep_report", {"q": topic})
    return report.content[0].text


# --8<-- [end:tool]
