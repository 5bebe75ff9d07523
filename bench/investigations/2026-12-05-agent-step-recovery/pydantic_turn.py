"""The pydantic-ai agents of the recovery measurement: one model turn, a model that blocks
(it writes ``call-<pid>`` into ``$RECOVERY_MARKERS``, then waits for ``release``); its
default activity options, and a 5 s heartbeat timeout. Kept free of set-up: the
workflow sandbox re-imports it."""

from __future__ import annotations

import asyncio
import os
import time
from datetime import timedelta
from pathlib import Path

from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart
from pydantic_ai.durable_exec.temporal import TemporalDurability
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow
from temporalio.workflow import ActivityConfig


async def blocking_turn() -> None:
    markers = Path(os.environ["RECOVERY_MARKERS"])
    (markers / f"call-{os.getpid()}").write_text(repr(time.time()))
    while not (markers / "release").exists():
        await asyncio.sleep(0.05)


async def blocking_function(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    await blocking_turn()
    return ModelResponse(parts=[TextPart("done")])


default_agent = Agent(
    FunctionModel(blocking_function), name="default", capabilities=[TemporalDurability()]
)
short_agent = Agent(
    FunctionModel(blocking_function),
    name="short",
    capabilities=[
        TemporalDurability(
            model_activity_config=ActivityConfig(heartbeat_timeout=timedelta(seconds=5))
        )
    ],
)


@workflow.defn
class PydanticDefault:
    __pydantic_ai_agents__ = (default_agent,)

    @workflow.run
    async def run(self) -> str:
        return (await default_agent.run("go")).output


@workflow.defn
class PydanticShort:
    __pydantic_ai_agents__ = (short_agent,)

    @workflow.run
    async def run(self) -> str:
        return (await short_agent.run("go")).output
