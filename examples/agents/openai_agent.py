"""An OpenAI Agents SDK agent running inside a workflow tool.

The agent is the SDK's (``Agent``, ``Runner.run``). With the Temporal plugin
(``OpenAIAgentsPlugin``) on the worker, each model call is an activity
(``invoke_model_activity``) and ``customer_plan``, the agent's tool, is one too
(``activity_as_tool``). The workflow around it is ours: ``StepReports`` turns
each model turn and tool call into a ``report_progress`` line, and the user
approves the verdict through ``ask``.

The model is the plugin's offline ``TestModel``, scripted from the
conversation (``ScriptedModel``), so the example runs without a key: drop
``model_provider`` from the plugin and name a real model (``"gpt-5"``).

Kept free of server set-up: the workflow sandbox re-imports this module.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from agents import Agent, ModelResponse, RunContextWrapper, RunHooks, Runner, Tool
from temporalio import activity, workflow
from temporalio.openai_agents import workflow as agents_workflow
from temporalio.openai_agents.testing import ResponseBuilders, TestModel

from examples.agents.triage import CUSTOMER, Triage, approve, customer_plan_of
from fastmcp_temporal.workflows import report_progress


@activity.defn
async def customer_plan(email: str) -> str:
    """The customer's plan: a CRM call, so an activity the agent calls as its tool."""
    return customer_plan_of(email)


# --8<-- [start:model]
class ScriptedModel(TestModel):
    """First turn: look the customer up (a tool call); second turn: the verdict.

    It answers from the conversation it is given, as a model does, so a worker
    that takes over after a crash gets the answer the first one would have.
    """

    def __init__(self) -> None:
        # TestModel calls its callable with no conversation: get_response answers instead.
        super().__init__(lambda: ResponseBuilders.output_message(""))

    async def get_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        return scripted_turn(input)


def scripted_turn(conversation: str | list[Any]) -> ModelResponse:
    """The tool call until the conversation holds its output; then the verdict."""
    outputs = [
        item["output"]
        for item in (conversation if isinstance(conversation, list) else [])
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    if not outputs:
        return ResponseBuilders.tool_call(json.dumps({"email": CUSTOMER}), "customer_plan")
    return ResponseBuilders.output_message(f"escalate: {outputs[0]} customer")


# --8<-- [end:model]


# --8<-- [start:agent]
triage_agent = Agent(
    name="triage",
    instructions="Triage support tickets.",
    model="gpt-5",  # the plugin's model provider answers for it (offline: ScriptedModel)
    tools=[
        agents_workflow.activity_as_tool(
            customer_plan, start_to_close_timeout=timedelta(seconds=30)
        )
    ],
)


class StepReports(RunHooks[Any]):
    """Each model turn and tool call, as the task's progress line."""

    def __init__(self) -> None:
        self.turns = 0

    async def on_llm_start(
        self, context: RunContextWrapper[Any], agent: Agent[Any], *args: Any
    ) -> None:
        self.turns += 1
        await report_progress(f"model turn {self.turns}", progress=self.turns)

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Any, tool: Tool) -> None:
        await report_progress(f"tool call: {tool.name}", progress=self.turns)


# --8<-- [end:agent]


# --8<-- [start:workflow]
@workflow.defn
class OpenAITriage:
    """Triage a support ticket with an OpenAI Agents SDK agent, then ask the user to approve."""

    @workflow.run
    async def run(self, ticket: str) -> Triage:
        result = await Runner.run(triage_agent, ticket, hooks=StepReports())
        return await approve(ticket, str(result.final_output))


# --8<-- [end:workflow]
