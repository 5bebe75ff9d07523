"""A workflow tool around pydantic-ai's deprecated ``TemporalAgent`` wrapper (free of server
set-up: the sandbox re-imports it). The example uses the capability that replaces it."""

from __future__ import annotations

import warnings

from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, UsageLimits
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from pydantic_ai.durable_exec.temporal import TemporalAgent


def echo_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompt = messages[-1].parts[-1]
    return ModelResponse(parts=[TextPart(f"wrapped agent read: {getattr(prompt, 'content', '')}")])


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    wrapped_agent = TemporalAgent(Agent(FunctionModel(echo_model), name="wrapped"))


@workflow.defn
class WrappedAgentTool:
    """Run pydantic-ai's TemporalAgent wrapper as a workflow tool."""

    __pydantic_ai_agents__ = (wrapped_agent,)

    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await wrapped_agent.run(prompt)).output


@workflow.defn
class OverBudgetAgentTool:
    """Run the agent with no model requests allowed: pydantic-ai raises ``UsageLimitExceeded``."""

    __pydantic_ai_agents__ = (wrapped_agent,)

    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await wrapped_agent.run(prompt, usage_limits=UsageLimits(request_limit=0))).output
