"""Drive the research agent: the client approves the plan when asked.

.venv/bin/python -m examples.research_agent.client           # runs the server in process

With ``--url http://127.0.0.1:8001/mcp`` it talks to ``examples.research_agent.server`` instead.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult

from examples.research_agent.server import mcp
from fastmcp_temporal.client import enable_transparent_tasks


async def approve(message: str, response_type: Any, params: Any, context: Any) -> ElicitResult:
    print(f"agent asks: {message} -> yes")
    return ElicitResult(action="accept", content={"approve": True})


async def main(url: str | None = None) -> None:
    enable_transparent_tasks()  # every Client declares the tasks extension
    async with Client(url or mcp, elicitation_handler=approve) as client:
        result = await client.call_tool("research_agent", {"topic": "durable execution"})
        print(result.structured_content)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", help="a running research agent server (default: in process)")
    asyncio.run(main(parser.parse_args().url))
