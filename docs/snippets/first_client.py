"""Getting started: call the first tool as a task and get its result.

python docs/snippets/first_client.py --url http://127.0.0.1:8002/mcp
"""

# --8<-- [start:client]
import argparse
import asyncio

from fastmcp import Client

from fastmcp_temporal.client import TasksClientExtension, call_tool_task


async def main(url: str) -> None:
    async with Client(url, extensions=[TasksClientExtension()]) as client:
        # A plain call_tool: the extension polls the task to its end.
        result = await client.call_tool("count_words", {"text": "one two\n\nthree"})
        print("words:", result.data)

        # Or hold the task: its id, its status, then its result.
        task = await call_tool_task(client, "count_words", {"text": "four five six"})
        print("task", task.task_id, "is", (await task.status()).status)
        print("words:", (await task.result()).data)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:8002/mcp")
    asyncio.run(main(parser.parse_args().url))
# --8<-- [end:client]
