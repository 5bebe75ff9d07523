"""Asking for input and checkpoints: a durable multi-step tool with ``Steps``.

python docs/snippets/steps_tool.py --port 8003
"""

import argparse
import logging

from fastmcp import Context, FastMCP

# --8<-- [start:import]
from fastmcp_temporal import Steps, TemporalTasks

# --8<-- [end:import]
mcp = FastMCP("steps")
mcp.add_extension(TemporalTasks())


async def download(url: str) -> str:
    return f"the page at {url}"  # stand-in for an HTTP fetch


async def summarize(page: str) -> str:
    return f"summary of {page}"


async def publish(summary: str) -> str:
    return f"published: {summary}"


# --8<-- [start:steps]
@mcp.tool(task=True)
async def report(url: str, ctx: Context) -> str:
    steps = Steps(ctx)
    page = await steps.run("download", download, url)
    summary = await steps.run("summarize", summarize, page)
    return await steps.run("publish", publish, summary)


# --8<-- [end:steps]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8003)
    logging.basicConfig(level=logging.INFO)
    mcp.run(transport="http", host="127.0.0.1", port=parser.parse_args().port)
