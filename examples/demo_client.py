"""Drive the demo server's tools as durable tasks: the whole protocol in one command.

    ./dev demo            # terminal 1: the server (embedded Temporal + Web UI)
    ./dev client          # terminal 2: this client (or: python -m examples.demo_client)

It opts in to the tasks extension (``TasksClientExtension`` from
``fastmcp_temporal.client``, on FastMCP 4.1 and 4.2 alike) and walks through what a task can do:

1. ``crunch``: ``tools/call`` answers at once with a task; ``tasks/get`` polls
   show its progress until it completes;
2. ``delete_file``: the task parks in ``input_required`` with a question; the
   client's elicitation handler answers it (``tasks/update``) and it completes.
   The handler is also what *declares* elicitation: a client without one would
   find the task parked, its ``statusMessage`` saying what it lacks, for another
   client to answer;
3. a long ``crunch`` cancelled half way (``tasks/cancel``);
4. ``flaky``: the tool raises, the task completes with an ``isError`` result.

Every task is a Temporal workflow: the server's log prints the Web UI address.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from fastmcp import Client

from fastmcp_temporal.client import TasksClientExtension, ToolTask, call_tool_task

DEFAULT_URL = "http://127.0.0.1:8000/mcp"


async def confirm(message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
    """The user's side of an elicitation: here, always yes."""
    print(f"   ? server asks: {message!r} -> answering yes")
    return {"confirm": True}


async def watch(task: ToolTask, label: str) -> None:
    """Poll ``tasks/get`` and print every change of status or progress message."""
    seen: tuple[str, str | None] | None = None
    while True:
        view = await task.status()
        now = (view.status, view.status_message)
        if now != seen:
            print(
                f"   {label}: {view.status}"
                + (f" - {view.status_message}" if view.status_message else "")
            )
            seen = now
        if view.status in ("completed", "failed", "cancelled", "input_required"):
            return
        await asyncio.sleep(0.5)


def text_of(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def tour(url: str) -> None:
    async with Client(
        url, elicitation_handler=confirm, extensions=[TasksClientExtension()]
    ) as client:
        print("1. crunch(steps=3): progress while it runs")
        crunch = await call_tool_task(client, "crunch", {"steps": 3})
        print(f"   tools/call returned task {crunch.task_id}")
        await watch(crunch, "crunch")
        print(f"   result: {text_of(await crunch.result())}")

        print("2. delete_file: the task asks a question")
        delete = await call_tool_task(client, "delete_file", {"filename": "notes.txt"})
        await watch(delete, "delete_file")
        print(f"   result: {text_of(await delete.result())}")

        print("3. crunch(steps=30), cancelled after 2 s")
        long = await call_tool_task(client, "crunch", {"steps": 30})
        await asyncio.sleep(2)
        await long.cancel()
        final = await long.wait(timeout=30)
        print(f"   after tasks/cancel: {final.status}")

        print("4. flaky: the tool raises")
        flaky = await call_tool_task(client, "flaky", {}, raise_on_error=False)
        outcome = await flaky.wait(timeout=30)
        content = (outcome.result or {}).get("content", [])
        errors = " ".join(block.get("text", "") for block in content)
        print(
            f"   status {outcome.status}, isError {(outcome.result or {}).get('isError')}: {errors}"
        )
    print("done: open the Temporal Web UI (its address is in the server's log) to see each task")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--url", default=DEFAULT_URL, help=f"the demo server (default {DEFAULT_URL})"
    )
    args = parser.parse_args()
    asyncio.run(tour(args.url))


if __name__ == "__main__":
    main()
