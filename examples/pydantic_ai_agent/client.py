"""Drive the pydantic-ai triage agent: the client approves the agent's verdict when asked.

.venv/bin/python -m examples.pydantic_ai_agent.client        # runs the server in process
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult

from examples.pydantic_ai_agent.server import build
from fastmcp_temporal.client import enable_transparent_tasks


async def approve(message: str, response_type: Any, params: Any, context: Any) -> ElicitResult:
    print(f"agent asks: {message} -> yes")
    return ElicitResult(action="accept", content={"approve": True})


async def main() -> None:
    enable_transparent_tasks()  # every Client declares the tasks extension
    async with Client(build(), elicitation_handler=approve) as client:
        result = await client.call_tool("triage_ticket", {"ticket": "login broken"})
        print(result.structured_content)


if __name__ == "__main__":
    asyncio.run(main())
