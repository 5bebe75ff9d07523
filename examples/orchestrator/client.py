"""The user's side: an MCP client whose "model" and "user" are a script (offline).

    python -m examples.orchestrator.client http://127.0.0.1:8010/mcp

It calls the triage agent as a task and answers what the task asks for: the
agent's sampling request with the client's model (here a scripted planner;
a real client calls its LLM, with its own key), and the support desk's
question, relayed by the agent, with the user's answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import mcp_types
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult

from fastmcp_temporal.client import call_tool_task, enable_transparent_tasks

TICKET = "Customers cannot log in since this morning"
CUSTOMER = "ada@example.com"


async def scripted_model(
    messages: list[mcp_types.SamplingMessage], params: Any, context: Any
) -> mcp_types.CreateMessageResult:
    """The client's model: a fixed plan, as JSON (the prompt asked for JSON)."""
    print(f"model asked: {params.system_prompt[:40]}... -> a plan")
    plan = {"summary": "login fails after deploy", "component": "auth", "severity": "high"}
    return mcp_types.CreateMessageResult(
        role="assistant",
        content=mcp_types.TextContent(type="text", text=json.dumps(plan)),
        model="scripted-planner",
        stop_reason="endTurn",
    )


async def scripted_user(message: str, response_type: Any, params: Any, context: Any) -> Any:
    print(f"user asked: {message} -> production")
    return ElicitResult(action="accept", content={"environment": "production"})


async def triage(url: str) -> dict[str, Any]:
    """Run the triage task to its end; return the report."""
    enable_transparent_tasks()  # every Client declares the tasks extension
    async with Client(
        url, sampling_handler=scripted_model, elicitation_handler=scripted_user, timeout=120
    ) as client:
        task = await call_tool_task(
            client, "triage_agent", {"ticket": TICKET, "customer_email": CUSTOMER}
        )
        print(f"triage task {task.task_id} started")
        result = await task.result(timeout=180)
    if result.structured_content is None:
        raise SystemExit(f"the triage failed: {result.content}")
    return result.structured_content


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url", nargs="?", default="http://127.0.0.1:8010/mcp")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(triage(args.url)), indent=2))


if __name__ == "__main__":
    main()
