"""Every path a task workflow can take, each driven to its end by a real client.

Each ``TaskPath`` below builds its own FastMCP server with ``TemporalTasks`` (see
``harness.py``), drives one task over the raw wire, checks it ended the way the
path says, and names the workflow runs it produced. ``catalog.PATHS`` (these
and ``paths_v2.py``) is the contract between the recorder and the replay gate:
the gate fails when the files on disk are not exactly ``catalog.FILES``. Tool
bodies are deterministic, so a re-recorded path issues the same commands.
"""

from __future__ import annotations

import asyncio

import mcp_types
from fastmcp import Context
from fastmcp.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from temporalio.client import WorkflowExecutionStatus

from fastmcp_temporal import Steps, workflow_tool
from fastmcp_temporal.server.tasks.starter import ToolOptions
from tests.histories.agent import AskingAgent, FailingAgent, shout
from tests.histories.harness import (
    Harness,
    Run,
    TaskPath,
    accept,
    answers,
    question,
    text,
    wid,
)
from tests.wire import RawMcp

#: The key the ``encrypted`` history was written with. Test data only: it is
#: committed so that the replay gate can decrypt that history.
TEST_ENCRYPTION_KEY = "replay-test:" + "5e" * 32


async def greet(ctx: Context) -> str:
    """One input round: ask for a name, then greet."""
    got = answers(ctx)
    if "name" not in got:
        return mcp_types.InputRequiredResult(input_requests=question("name", "Name?"))  # type: ignore[return-value]
    return f"Hello, {got['name']}!"


async def _greet_once(harness: Harness, file: str, **options: object) -> dict[str, Run]:
    """``greet`` through its input round, on a server built with ``options``."""
    async with harness.serve(harness.tasks(**options), greet) as wire:  # type: ignore[arg-type]
        task = await wire.start("greet")
        (key,) = (await wire.wait_status(task, "input_required"))["inputRequests"]
        await wire.answer(task, {key: accept("Ada")})
        assert text(await wire.wait_status(task, "completed")) == "Hello, Ada!"
    return {file: Run(wid(task))}


async def plain_result(harness: Harness) -> dict[str, Run]:
    async def add(a: int, b: int) -> int:
        return a + b

    async with harness.serve(harness.tasks(), add) as wire:
        task = await wire.start("add", {"a": 2, "b": 3})
        done = await wire.wait_status(task, "completed")
        assert done["result"]["structuredContent"] == {"result": 5}
    return {"plain_result": Run(wid(task))}


async def is_error_result(harness: Harness) -> dict[str, Run]:
    async def refuse() -> str:
        raise ToolError("refused on purpose")

    async with harness.serve(harness.tasks(), refuse) as wire:
        task = await wire.start("refuse")
        done = await wire.wait_status(task, "completed")
        assert done["result"]["isError"] is True and text(done) == "refused on purpose"
    return {"is_error_result": Run(wid(task))}


async def mcp_error_failure(harness: Harness) -> dict[str, Run]:
    async def upstream() -> str:
        raise MCPError(code=-32602, message="upstream said: bad params")

    async with harness.serve(harness.tasks(), upstream) as wire:
        task = await wire.start("upstream")
        failed = await wire.wait_status(task, "failed")
        assert failed["error"]["code"] == -32602
    return {"mcp_error_failure": Run(wid(task))}


async def input_partial_then_full(harness: Harness) -> dict[str, Run]:
    async def pair(ctx: Context) -> str:
        got = answers(ctx)
        if not got:
            requests = {**question("a", "A?"), **question("b", "B?")}
            return mcp_types.InputRequiredResult(input_requests=requests)  # type: ignore[return-value]
        return f"{got['a']}{got['b']}"

    async with harness.serve(harness.tasks(), pair) as wire:
        task = await wire.start("pair")
        key_a, key_b = sorted((await wire.wait_status(task, "input_required"))["inputRequests"])
        await wire.answer(task, {key_a: accept("x")})
        await wire.wait(task, lambda view: set(view.get("inputRequests") or {}) == {key_b})
        await wire.answer(task, {key_b: accept("y")})
        assert text(await wire.wait_status(task, "completed")) == "xy"
    return {"input_partial_then_full": Run(wid(task))}


async def three_steps(ctx: Context) -> str:
    """Three ``Steps``: each finished step is a state-only round (a checkpoint)."""
    steps = Steps(ctx)
    done = [await steps.run(name, lambda name=name: name) for name in ("one", "two", "three")]
    return "+".join(done)


async def steps_checkpoint(harness: Harness) -> dict[str, Run]:
    async with harness.serve(harness.tasks(), three_steps) as wire:
        task = await wire.start("three_steps")
        assert text(await wire.wait_status(task, "completed")) == "one+two+three"
    return {"steps_checkpoint": Run(wid(task))}


async def continue_as_new(harness: Harness) -> dict[str, Run]:
    """Four legs at two per run: run 1 continues as new, run 2 resumes and completes."""
    async with harness.serve(harness.tasks(rounds_per_run=2), three_steps) as wire:
        task = await wire.start("three_steps")
        assert text(await wire.wait_status(task, "completed")) == "one+two+three"
    handle = harness.client.get_workflow_handle(wid(task))
    last = await handle.describe()
    history = await handle.fetch_history()
    first = history.events[0].workflow_execution_started_event_attributes
    assert first.continued_execution_run_id, "the task never continued as new"
    return {
        "continue_as_new.run1": Run(wid(task), first.continued_execution_run_id),
        "continue_as_new.run2": Run(wid(task), last.run_id),
    }


async def cancel_running(harness: Harness) -> dict[str, Run]:
    started = asyncio.Event()

    async def forever() -> str:
        started.set()
        await asyncio.sleep(3600)
        return "never"

    async with harness.serve(harness.tasks(), forever) as wire:
        task = await wire.start("forever")
        await asyncio.wait_for(started.wait(), 60)
        await wire.cancel(task)
        await wire.wait_status(task, "cancelled")
    return {"cancel_running": Run(wid(task))}


async def cancel_parked(harness: Harness) -> dict[str, Run]:
    async with harness.serve(harness.tasks(), greet) as wire:
        task = await wire.start("greet")
        await wire.wait_status(task, "input_required")
        await wire.cancel(task)
        await wire.wait_status(task, "cancelled")
    return {"cancel_parked": Run(wid(task))}


async def ttl_parked(harness: Harness) -> dict[str, Run]:
    """Parked past its TTL (2 s): the workflow's own timer fails it with -32000."""
    extension = harness.tasks(tools={"greet": ToolOptions(ttl_ms=2000)})
    async with harness.serve(extension, greet) as wire:
        task = await wire.start("greet")
        failed = await wire.wait_status(task, "failed")
        assert failed["error"]["code"] == -32000
    return {"ttl_parked": Run(wid(task))}


async def ttl_running(harness: Harness) -> dict[str, Run]:
    """Still running at TTL (1 s) + ``EXPIRY_GRACE`` (1 min): Temporal times the workflow out."""

    async def endless() -> str:
        await asyncio.sleep(3600)
        return "never"

    extension = harness.tasks(tools={"endless": ToolOptions(ttl_ms=1000)})
    async with harness.serve(extension, endless) as wire:
        task = await wire.start("endless")
        status = await harness.wait_closed(wid(task), timeout=150)
        assert status == WorkflowExecutionStatus.TIMED_OUT
        failed = await wire.wait_status(task, "failed")
        assert failed["error"]["code"] == -32000
    return {"ttl_running": Run(wid(task))}


async def mrtr_first(harness: Harness) -> dict[str, Run]:
    """Round 1 gets the question on ``tools/call``; round 2 answers it and gets the task."""
    async with harness.serve(harness.tasks(mrtr_first_tools={"greet"}), greet) as wire:
        raw: RawMcp = wire.raw
        first = await raw.result("tools/call", {"name": "greet", "arguments": {}})
        assert first["resultType"] == "input_required", first
        (key,) = first["inputRequests"]
        second = await raw.result(
            "tools/call",
            {
                "name": "greet",
                "arguments": {},
                "inputResponses": {key: accept("Ada")},
                "requestState": first["requestState"],
            },
        )
        assert second["resultType"] == "task", second
        task = str(second["taskId"])
        assert text(await wire.wait_status(task, "completed")) == "Hello, Ada!"
    return {"mrtr_first": Run(wid(task))}


async def workflow_tool_ask_progress(harness: Harness) -> dict[str, Run]:
    """A workflow tool: the task workflow relays ``ask`` and progress of its ``-body`` child."""
    tool = workflow_tool(AskingAgent, activities=[shout])
    async with harness.serve(harness.tasks(), tool) as wire:
        task = await wire.start("asking_agent", {"salutation": "Hi"})
        parked = await wire.wait_status(task, "input_required")
        assert parked["statusMessage"] == "asking for a name"
        (key,) = parked["inputRequests"]
        await wire.answer(task, {key: {"action": "accept", "content": {"name": "Ada"}}})
        assert text(await wire.wait_status(task, "completed")) == "HI, ADA!"
    return {
        "workflow_tool": Run(wid(task)),
        "workflow_tool.body": Run(f"{wid(task)}-body"),
    }


async def workflow_tool_failure(harness: Harness) -> dict[str, Run]:
    """The tool's workflow fails: the final leg turns its error into an ``isError`` result."""
    async with harness.serve(harness.tasks(), workflow_tool(FailingAgent)) as wire:
        task = await wire.start("failing_agent")
        done = await wire.wait_status(task, "completed")
        assert done["result"]["isError"] is True, done
    return {
        "workflow_tool_failure": Run(wid(task)),
        "workflow_tool_failure.body": Run(f"{wid(task)}-body"),
    }


async def workflow_tool_cancel_parked(harness: Harness) -> dict[str, Run]:
    """Cancelled while its workflow waits in ``ask``: the child is cancelled with the task."""
    tool = workflow_tool(AskingAgent, activities=[shout])
    async with harness.serve(harness.tasks(), tool) as wire:
        task = await wire.start("asking_agent")
        await wire.wait_status(task, "input_required")
        await wire.cancel(task)
        await wire.wait_status(task, "cancelled")
        body = await harness.wait_closed(f"{wid(task)}-body", timeout=60)
        assert body == WorkflowExecutionStatus.CANCELED
    return {
        "workflow_tool_cancel_parked": Run(wid(task)),
        "workflow_tool_cancel_parked.body": Run(f"{wid(task)}-body"),
    }


async def max_rounds_exceeded(harness: Harness) -> dict[str, Run]:
    """A tool that checkpoints forever fails at ``max_rounds`` with -32603."""

    async def forever_again() -> str:
        return mcp_types.InputRequiredResult(request_state="again")  # type: ignore[return-value]

    async with harness.serve(harness.tasks(max_rounds=2), forever_again) as wire:
        task = await wire.start("forever_again")
        failed = await wire.wait_status(task, "failed")
        assert failed["error"]["code"] == -32603
    return {"max_rounds_exceeded": Run(wid(task))}


async def local_leg(harness: Harness) -> dict[str, Run]:
    """``ToolOptions(local_legs=True)``: both legs are local activities (markers)."""
    return await _greet_once(harness, "local_leg", tools={"greet": ToolOptions(local_legs=True)})


async def encrypted(harness: Harness) -> dict[str, Run]:
    """Every payload sealed with ``TEST_ENCRYPTION_KEY`` (arguments, question, answer, result)."""
    return await _greet_once(harness, "encrypted", encrypted=True)


#: The paths as recorded on the code before the patches ``legs-retry-until-deadline``
#: and ``progress-in-memo`` (``tests/histories/*.json``); ``paths_v2.py`` records
#: them again on the patched code. Never re-recorded: tasks in flight look like them.
FIRST_GENERATION: tuple[TaskPath, ...] = (
    TaskPath("plain_result", plain_result, ("plain_result",)),
    TaskPath("is_error_result", is_error_result, ("is_error_result",)),
    TaskPath("mcp_error_failure", mcp_error_failure, ("mcp_error_failure",)),
    TaskPath("input_partial_then_full", input_partial_then_full, ("input_partial_then_full",)),
    TaskPath("steps_checkpoint", steps_checkpoint, ("steps_checkpoint",)),
    TaskPath("continue_as_new", continue_as_new, ("continue_as_new.run1", "continue_as_new.run2")),
    TaskPath("cancel_running", cancel_running, ("cancel_running",)),
    TaskPath("cancel_parked", cancel_parked, ("cancel_parked",)),
    TaskPath("ttl_parked", ttl_parked, ("ttl_parked",)),
    TaskPath("ttl_running", ttl_running, ("ttl_running",)),
    TaskPath("mrtr_first", mrtr_first, ("mrtr_first",)),
    TaskPath(
        "workflow_tool_ask_progress",
        workflow_tool_ask_progress,
        ("workflow_tool", "workflow_tool.body"),
    ),
    TaskPath(
        "workflow_tool_failure",
        workflow_tool_failure,
        ("workflow_tool_failure", "workflow_tool_failure.body"),
    ),
    TaskPath(
        "workflow_tool_cancel_parked",
        workflow_tool_cancel_parked,
        ("workflow_tool_cancel_parked", "workflow_tool_cancel_parked.body"),
    ),
    TaskPath("max_rounds_exceeded", max_rounds_exceeded, ("max_rounds_exceeded",)),
    TaskPath("local_leg", local_leg, ("local_leg",)),
    TaskPath("encrypted", encrypted, ("encrypted",), encrypted=True),
)
