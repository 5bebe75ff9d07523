"""Call each agent tool with a plain ``tools/call``, as a host (Claude Code, Codex) makes it.

.venv/bin/python -m examples.agents.client                     # the server in process
.venv/bin/python -m examples.agents.client --url http://127.0.0.1:8003/mcp

The client declares no tasks extension: each call waits for its result (a
durable synchronous call), and the agent's question reaches it as an
elicitation, answered here by a scripted user.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult

from examples.agents.triage import TICKET

TOOLS = ("openai_triage", "langgraph_triage", "triage_ticket")


async def approve(message: str, response_type: Any, params: Any, context: Any) -> ElicitResult:
    print(f"agent asks: {message} -> yes")
    return ElicitResult(action="accept", content={"approve": True})


async def main(url: str | None) -> None:
    if url is None:
        from examples.agents.server import build

        target: Any = build()
    else:
        target = url
    async with Client(target, elicitation_handler=approve) as client:
        for tool in TOOLS:
            result = await client.call_tool(tool, {"ticket": TICKET})
            print(f"{tool}: {result.structured_content}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", help="a running agents server (default: in process)")
    asyncio.run(main(parser.parse_args().url))
