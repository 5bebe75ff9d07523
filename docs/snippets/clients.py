"""Python clients: drive the demo server's tools as tasks from a plain FastMCP ``Client``.

./dev demo                                  # terminal 1
python docs/snippets/clients.py             # terminal 2
"""

import argparse
import asyncio
from typing import Any

# --8<-- [start:client]
from fastmcp import Client

from fastmcp_temporal.client import TasksClientExtension, call_tool_task


async def yes(message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
    return {"confirm": True}  # the user's answer; having a handler declares elicitation


async def main(url: str) -> None:
    async with Client(url, elicitation_handler=yes, extensions=[TasksClientExtension()]) as client:
        print((await client.call_tool("crunch", {"steps": 3})).data)  # polled to the end

        task = await call_tool_task(client, "delete_file", {"filename": "a.txt"})
        state = await task.wait(state="input_required")  # task.status(): one tasks/get
        (key,) = state.input_requests or {}
        await task.answer({key: {"action": "accept", "content": {"confirm": True}}})
        print((await task.result()).data)  # or: await task.cancel()


# --8<-- [end:client]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:8000/mcp")
    asyncio.run(main(parser.parse_args().url))
