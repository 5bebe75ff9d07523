"""Getting started: a FastMCP server whose tool runs as a durable Temporal task.

python docs/snippets/first_tool.py --port 8002
"""

# --8<-- [start:server]
import argparse
import logging

# --8<-- [start:tool]
from fastmcp import Context, FastMCP

from fastmcp_temporal import TemporalTasks

mcp = FastMCP("first-tool")
mcp.add_extension(TemporalTasks())  # no address: an embedded Temporal in .fastmcp-temporal/


@mcp.tool(task=True)
async def count_words(text: str, ctx: Context) -> int:
    """Count the words of `text`, a paragraph at a time, reporting progress."""
    paragraphs, words = text.split("\n\n"), 0
    for done, paragraph in enumerate(paragraphs, start=1):
        words += len(paragraph.split())
        await ctx.report_progress(done, len(paragraphs), f"paragraph {done}")
    return words


# --8<-- [end:tool]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8002)
    logging.basicConfig(level=logging.INFO)  # shows where the embedded Temporal and its UI are
    mcp.run(transport="http", host="127.0.0.1", port=parser.parse_args().port)
# --8<-- [end:server]
