"""A LangGraph graph as the docs' newcomer first writes it: LangGraph's stock
``tools_condition`` as the router. It is sync, so LangGraph runs it in an executor,
which the workflow's event loop does not have: the body's workflow task fails on every
attempt (kept free of server set-up: the sandbox re-imports it)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from temporalio import workflow
from temporalio.langgraph import graph

IN_AN_ACTIVITY = {"execute_in": "activity", "start_to_close_timeout": timedelta(seconds=30)}


async def call_model(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(content="all good")]}


async def call_tools(state: MessagesState) -> dict[str, Any]:
    return {"messages": []}


def routed_graph() -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model, metadata=IN_AN_ACTIVITY)
    builder.add_node("tools", call_tools, metadata=IN_AN_ACTIVITY)
    builder.set_entry_point("model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder


@workflow.defn
class StockRouterAgent:
    """Answer with a graph routed by LangGraph's stock (sync) ``tools_condition``."""

    @workflow.run
    async def run(self, question: str) -> str:
        app = graph("routed").compile()
        state = await app.ainvoke({"messages": [HumanMessage(question)]})
        return str(state["messages"][-1].content)
