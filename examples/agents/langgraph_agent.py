"""A LangGraph graph running inside a workflow tool.

The graph is LangGraph's (``StateGraph``: a model node and a tools node, looping
until the model answers). With the Temporal plugin (``LangGraphPlugin``) on the
worker, each node marked ``execute_in: "activity"`` runs as an activity
(``triage.model``, ``triage.tools``); the routing between them runs in the
workflow. The workflow around it is ours: each node's update becomes a
``report_progress`` line, and the user approves the verdict through ``ask``.

The model is LangChain's offline ``FakeMessagesListChatModel``, scripted
(``SCRIPT``), so the example runs without a key: put any chat model in
``call_model``.

Kept free of server set-up: the workflow sandbox re-imports this module.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_messages
from langgraph.graph import END, START, MessagesState, StateGraph
from temporalio import workflow
from temporalio.langgraph import graph

from examples.agents.triage import CUSTOMER, Triage, approve, customer_plan_of
from fastmcp_temporal.workflows import report_progress

# --8<-- [start:model]
#: The model's answers, turn by turn: look the customer up, then the verdict.
SCRIPT = [
    AIMessage(
        content="",
        tool_calls=[{"name": "customer_plan", "args": {"email": CUSTOMER}, "id": "call-1"}],
    ),
    AIMessage(content="escalate: enterprise customer"),
]
IN_AN_ACTIVITY = {"execute_in": "activity", "start_to_close_timeout": timedelta(seconds=30)}


async def call_model(state: MessagesState) -> dict[str, Any]:
    """A model turn. The scripted model answers the turn the conversation is at, as a
    model answers the conversation it is given (a worker that takes over agrees)."""
    messages = convert_to_messages(state["messages"])  # dicts, across the activity boundary
    turn = sum(isinstance(message, AIMessage) for message in messages)
    model = FakeMessagesListChatModel(responses=SCRIPT[turn:])
    return {"messages": [await model.ainvoke(messages)]}


# --8<-- [end:model]


async def call_tools(state: MessagesState) -> dict[str, Any]:
    """The tool calls of the model's last turn (here a CRM lookup)."""
    last = convert_to_messages(state["messages"])[-1]
    assert isinstance(last, AIMessage)
    return {
        "messages": [
            ToolMessage(customer_plan_of(**call["args"]), tool_call_id=call["id"])
            for call in last.tool_calls
        ]
    }


# --8<-- [start:router]
async def next_step(state: MessagesState) -> str:
    """``langgraph.prebuilt.tools_condition``, async: a router runs in the workflow, and
    LangGraph runs a sync one on a thread, which a workflow refuses."""
    last = convert_to_messages(state["messages"])[-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


# --8<-- [end:router]


# --8<-- [start:graph]
def triage_graph() -> StateGraph[Any, Any, Any, Any]:
    """A new graph each time: ``LangGraphPlugin(graphs=...)`` wraps the nodes it is given."""
    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model, metadata=IN_AN_ACTIVITY)
    builder.add_node("tools", call_tools, metadata=IN_AN_ACTIVITY)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", next_step, ["tools", END])
    builder.add_edge("tools", "model")
    return builder


# --8<-- [end:graph]


# --8<-- [start:workflow]
@workflow.defn
class LangGraphTriage:
    """Triage a support ticket with a LangGraph graph, then ask the user to approve."""

    @workflow.run
    async def run(self, ticket: str) -> Triage:
        app = graph("triage").compile()
        turns, last = 0, AIMessage("")
        async for node, update in _updates(app, {"messages": [HumanMessage(ticket)]}):
            if node == "model":
                turns += 1
                last = convert_to_messages(update["messages"])[-1]
                await report_progress(f"model turn {turns}", progress=turns)
            else:
                names = ", ".join(call["name"] for call in getattr(last, "tool_calls", []))
                await report_progress(f"tool call: {names}", progress=turns)
        return await approve(ticket, str(last.content))


# --8<-- [end:workflow]


async def _updates(app: Any, state: dict[str, Any]) -> Any:
    """Each node's update as the graph runs: ``(node, update)``."""
    async for chunk in app.astream(state, stream_mode="updates"):
        for node, update in chunk.items():
            yield node, update
