"""A pydantic-ai durable agent running inside a workflow tool.

The agent is pydantic-ai's (``Agent`` with the ``TemporalDurability``
capability): its model requests and its tool calls are Temporal activities.
The workflow around it is ours (``workflow_tool``): it reports progress to the
MCP task and asks the MCP client before acting. Both run on one worker: the
server's ``TemporalTasks(plugins=[PydanticAIPlugin()])``.

The model is pydantic-ai's offline ``FunctionModel`` (a scripted "LLM") so the
example runs without a key: swap it for ``"openai:gpt-5"`` or any model name.

Kept free of server set-up: the workflow sandbox re-imports this module.
"""

from __future__ import annotations

import mcp_types
from pydantic import BaseModel
from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.durable_exec.temporal import TemporalDurability
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow

from fastmcp_temporal.workflows import ask, report_progress


class Triage(BaseModel):
    ticket: str
    verdict: str
    approved: bool


# --8<-- [start:model]
def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """First turn: look the customer up (a tool call); second turn: the verdict."""
    tool_returns = [
        part.content
        for message in messages
        for part in message.parts
        if part.part_kind == "tool-return"
    ]
    if not tool_returns:
        return ModelResponse(parts=[ToolCallPart("customer_plan", {"email": "ada@example.com"})])
    return ModelResponse(parts=[TextPart(f"escalate: {tool_returns[0]} customer")])


# --8<-- [end:model]


# --8<-- [start:agent]
triage_agent = Agent(
    FunctionModel(scripted_model, model_name="scripted"),
    name="triage",
    instructions="Triage support tickets.",
    capabilities=[TemporalDurability()],
)
# --8<-- [end:agent]


@triage_agent.tool_plain
async def customer_plan(email: str) -> str:
    """The customer's plan (a stand-in for a CRM call; it runs as an activity)."""
    return "enterprise" if email.endswith("@example.com") else "free"


# --8<-- [start:workflow]
@workflow.defn
class TriageTicket:
    """Triage a support ticket with a pydantic-ai agent, then ask the user to approve."""

    #: pydantic-ai's plugin registers the activities of the agents listed here.
    __pydantic_ai_agents__ = (triage_agent,)

    @workflow.run
    async def run(self, ticket: str) -> Triage:
        await report_progress("the agent is reading the ticket")
        verdict = (await triage_agent.run(ticket)).output
        await report_progress(f"agent says: {verdict}")
        answer = await ask(
            mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message=f"The agent suggests {verdict!r}. Go ahead?",
                    requested_schema={
                        "type": "object",
                        "properties": {"approve": {"type": "boolean"}},
                        "required": ["approve"],
                    },
                )
            ),
            key="approve",
        )
        approved = (
            isinstance(answer, mcp_types.ElicitResult)
            and answer.action == "accept"
            and bool((answer.content or {}).get("approve"))
        )
        return Triage(ticket=ticket, verdict=verdict, approved=approved)


# --8<-- [end:workflow]
