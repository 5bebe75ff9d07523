"""Durable agents, the client side: answer a task's sampling requests with your model.

python docs/snippets/sampling_client.py --url http://127.0.0.1:8005/mcp
"""

import argparse
import asyncio
from typing import Any

from fastmcp import Client
from mcp_types import CreateMessageRequestParams, CreateMessageResult, SamplingMessage

from fastmcp_temporal.client import TasksClientExtension, call_tool_task


async def call_my_llm(
    system_prompt: str | None, messages: list[SamplingMessage], max_tokens: int
) -> str:
    """Stand-in for your model's API: a one-line plan."""
    return "reproduce the login failure, then page the auth team"


# --8<-- [start:client]
async def my_model(
    messages: list[SamplingMessage], params: CreateMessageRequestParams, context: Any
) -> str | CreateMessageResult:
    return await call_my_llm(params.system_prompt, messages, params.max_tokens)


async def main(url: str) -> None:
    async with Client(
        url, sampling_handler=my_model, extensions=[TasksClientExtension()]
    ) as client:
        task = await call_tool_task(client, "triage", {"ticket": "login broken"})
        report = await task.result()  # answers sampling and elicitation as asked
        print(report.data)


# --8<-- [end:client]

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:8005/mcp")
    asyncio.run(main(parser.parse_args().url))
