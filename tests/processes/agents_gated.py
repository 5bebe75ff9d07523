"""The example agents with a tool that waits for the test, and a model that keeps a log.

Each framework's agent makes the examples' two model turns around one tool call,
but its tool (an activity) records that it started and then waits for a
``release`` file, heartbeating, so a test can kill its worker or cancel its task
*between the turns*; each model call appends ``<pid> <turn>`` to ``model-calls``.
The directory is ``$AGENT_MARKERS`` (read when called: worker processes get it
in their environment). Free of server set-up: the workflow sandbox re-imports it.
"""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from agents import Agent, ModelResponse, Runner
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_messages
from langgraph.graph import END, START, MessagesState, StateGraph
from temporalio import activity, workflow
from temporalio.langgraph import graph
from temporalio.openai_agents import workflow as agents_workflow
from temporalio.openai_agents.testing import TestModel

from examples.agents import langgraph_agent, openai_agent
from examples.agents.triage import customer_plan_of

HEARTBEAT = timedelta(seconds=2)


def markers() -> Path:
    return Path(os.environ["AGENT_MARKERS"])


def log_model_call(turn: int) -> None:
    with open(markers() / "model-calls", "a") as log:
        log.write(f"{os.getpid()} {turn}\n")


async def wait_for_release(tool: str) -> None:
    """Say the tool runs, then wait for the test; a cancelled wait says so too."""
    (markers() / f"{tool}-started-{os.getpid()}").write_text("")
    try:
        while not (markers() / "release").exists():
            activity.heartbeat()
            await asyncio.sleep(0.1)
    except asyncio.CancelledError:
        (markers() / f"{tool}-cancelled").write_text("")
        raise


# -- OpenAI Agents SDK ----------------------------------------------------------------


@activity.defn
async def customer_plan(email: str) -> str:
    """The examples' tool (its name is the one the scripted model calls), gated."""
    await wait_for_release("openai")
    return customer_plan_of(email)


class LoggedModel(TestModel):
    """The example's scripted model, each call logged."""

    def __init__(self) -> None:
        # TestModel calls its callable with no conversation: get_response answers instead.
        super().__init__(lambda: openai_agent.scripted_turn(""))

    async def get_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        answer = openai_agent.scripted_turn(input)
        log_model_call(1 if answer.output[0].type == "function_call" else 2)
        return answer


gated_agent = Agent(
    name="gated",
    model="gpt-5",
    tools=[
        agents_workflow.activity_as_tool(
            customer_plan,
            start_to_close_timeout=timedelta(seconds=60),
            heartbeat_timeout=HEARTBEAT,
        )
    ],
)


@workflow.defn
class GatedOpenAIAgent:
    """The example's agent, its tool gated; it returns the verdict (no approval)."""

    @workflow.run
    async def run(self, ticket: str) -> str:
        return str((await Runner.run(gated_agent, ticket)).final_output)


# -- LangGraph --------------------------------------------------------------------------


async def logged_model(state: MessagesState) -> dict[str, Any]:
    update = await langgraph_agent.call_model(state)
    turns = sum(isinstance(m, AIMessage) for m in convert_to_messages(state["messages"]))
    log_model_call(turns + 1)
    return update


async def gated_tools(state: MessagesState) -> dict[str, Any]:
    await wait_for_release("langgraph")
    update = await langgraph_agent.call_tools(state)
    assert all(isinstance(m, ToolMessage) for m in update["messages"])
    return update


def gated_graph() -> StateGraph[Any, Any, Any, Any]:
    tools = {**langgraph_agent.IN_AN_ACTIVITY, "heartbeat_timeout": HEARTBEAT}
    builder = StateGraph(MessagesState)
    builder.add_node("model", logged_model, metadata=langgraph_agent.IN_AN_ACTIVITY)
    builder.add_node("tools", gated_tools, metadata=tools)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", langgraph_agent.next_step, ["tools", END])
    builder.add_edge("tools", "model")
    return builder


@workflow.defn
class GatedGraph:
    """The example's graph, its tools node gated; it returns the verdict (no approval)."""

    @workflow.run
    async def run(self, ticket: str) -> str:
        final = await graph("gated").compile().ainvoke({"messages": [HumanMessage(ticket)]})
        return str(convert_to_messages(final["messages"])[-1].content)
