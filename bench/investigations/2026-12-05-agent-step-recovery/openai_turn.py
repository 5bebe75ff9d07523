"""The OpenAI Agents SDK agent of the recovery measurement: one model turn, a model that
blocks (it writes ``call-<pid>`` into ``$RECOVERY_MARKERS``, then waits for ``release``).
Kept free of set-up: the workflow sandbox re-imports it."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from agents import Agent, ModelResponse, Runner
from temporalio import workflow
from temporalio.openai_agents.testing import ResponseBuilders, TestModel


async def blocking_turn() -> None:
    markers = Path(os.environ["RECOVERY_MARKERS"])
    (markers / f"call-{os.getpid()}").write_text(repr(time.time()))
    while not (markers / "release").exists():
        await asyncio.sleep(0.05)


class BlockingModel(TestModel):
    def __init__(self) -> None:
        super().__init__(lambda: ResponseBuilders.output_message("done"))

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        await blocking_turn()
        return ResponseBuilders.output_message("done")


openai_agent = Agent(name="one_turn", model="gpt-5")


@workflow.defn
class OpenAIOneTurn:
    @workflow.run
    async def run(self) -> str:
        return str((await Runner.run(openai_agent, "go")).final_output)
