"""Workflow tools for the tests (kept free of server set-up: the sandbox re-imports it)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import mcp_types
from pydantic import BaseModel
from temporalio import activity, workflow

from fastmcp_temporal.workflows import ask, caller, report_progress


class Summary(BaseModel):
    greeting: str
    asked_by: str | None
    steps: list[str]


@activity.defn
async def logged_step(marker_dir: str, name: str) -> str:
    """Record the run; step ``wait`` blocks (heartbeating) until ``release`` exists."""
    markers = Path(marker_dir)
    _log(markers, name)
    try:
        while name == "wait" and not (markers / "release").exists():
            activity.heartbeat()
            await asyncio.sleep(0.05)
    except asyncio.CancelledError:
        _log(markers, "cancelled")
        raise
    return name


def _log(markers: Path, line: str) -> None:
    with (markers / "runs.log").open("a") as runs:
        runs.write(line + "\n")


@workflow.defn
class GreeterAgent:
    """Greet someone after asking for their name, running two logged steps."""

    @workflow.run
    async def run(self, marker_dir: str, salutation: str = "Hello") -> Summary:
        options = {
            "start_to_close_timeout": timedelta(seconds=60),
            "heartbeat_timeout": timedelta(seconds=2),
        }
        first = await workflow.execute_activity(logged_step, args=[marker_dir, "first"], **options)
        await report_progress("asking for a name")
        answer = await ask(
            mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message="Your name?",
                    requested_schema={
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"],
                    },
                )
            ),
            key="name",
        )
        name = (answer.content or {}).get("name", "?")  # type: ignore[union-attr]
        await report_progress(f"greeting {name}")
        second = await workflow.execute_activity(logged_step, args=[marker_dir, "wait"], **options)
        return Summary(
            greeting=f"{salutation}, {name}!", asked_by=caller().subject, steps=[first, second]
        )


@workflow.defn
class ProgressFlood:
    """Report progress many times in one go, then wait for ``release``."""

    def __init__(self) -> None:
        self._released = False

    @workflow.signal
    def release(self) -> None:
        self._released = True

    @workflow.run
    async def run(self, reports: int) -> int:
        for n in range(1, reports + 1):
            await report_progress(f"report {n} of {reports}", progress=n, total=reports)
        await workflow.wait_condition(lambda: self._released)
        return reports


@workflow.defn
class Stepper:
    """Report ``steps`` steps (``step i``, i of ``steps``), a workflow timer apart."""

    @workflow.run
    async def run(self, steps: int) -> str:
        for step in range(1, steps + 1):
            await report_progress(f"step {step}", progress=step, total=steps)
            await workflow.sleep(timedelta(seconds=2))
        return f"{steps} steps"


@activity.defn
async def model_turn(turn: int) -> str:
    """A scripted model's turn: a few milliseconds."""
    return f"answer {turn}"


@workflow.defn
class StepLines:
    """An agent's step lines as the agents guide writes them: a model turn, a tool call
    at the same number, a second turn, then the answer at once; each step an activity."""

    @workflow.run
    async def run(self) -> str:
        options = {"start_to_close_timeout": timedelta(seconds=30)}
        await report_progress("model turn 1", progress=1)
        await workflow.execute_activity(model_turn, 1, **options)  # type: ignore[call-overload]
        await report_progress("tool call: lookup", progress=1)
        await workflow.execute_activity(model_turn, 2, **options)  # type: ignore[call-overload]
        await report_progress("model turn 2", progress=2)
        return await workflow.execute_activity(model_turn, 3, **options)  # type: ignore[call-overload]
