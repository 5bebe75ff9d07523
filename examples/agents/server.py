"""Three agent frameworks' durable agents as MCP task tools on one server and one worker.

.venv/bin/python -m examples.agents.server --port 8003

``openai_triage`` (OpenAI Agents SDK), ``langgraph_triage`` (LangGraph) and
``triage_ticket`` (pydantic-ai, ``examples/pydantic_ai_agent``), each with its
framework's Temporal plugin beside ours. Offline: every model is scripted.
Needs the extras: ``pip install 'fastmcp-temporal[openai-agents,langgraph,agents]'``.
"""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any

# --8<-- [start:build]
from fastmcp import FastMCP
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.langgraph import LangGraphPlugin
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents.testing import TestModelProvider
from temporalio.plugin import SimplePlugin

from examples.agents.langgraph_agent import LangGraphTriage, triage_graph
from examples.agents.openai_agent import OpenAITriage, ScriptedModel, customer_plan
from examples.pydantic_ai_agent.agent import TriageTicket
from fastmcp_temporal import TemporalTasks, workflow_tool


def agent_plugins() -> list[SimplePlugin]:
    """Each framework's Temporal plugin, new (LangGraph's wraps the graph it is given)."""
    return [
        # Model calls as activities; offline, its test model answers for "gpt-5".
        OpenAIAgentsPlugin(
            model_provider=TestModelProvider(ScriptedModel()),
            model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30)),
        ),
        # Graph nodes marked execute_in="activity" as activities.
        LangGraphPlugin(graphs={"triage": triage_graph()}),
        # pydantic-ai's agents of the workflow tools (__pydantic_ai_agents__).
        PydanticAIPlugin(),
    ]


def build(**tasks_options: Any) -> FastMCP:
    """The server; ``tasks_options`` go to ``TemporalTasks`` (tests pick their Temporal)."""
    tasks_options.setdefault("plugins", agent_plugins())
    mcp = FastMCP("agents")
    mcp.add_extension(TemporalTasks(**tasks_options))
    mcp.add_tool(workflow_tool(OpenAITriage, name="openai_triage", activities=[customer_plan]))
    mcp.add_tool(workflow_tool(LangGraphTriage, name="langgraph_triage"))
    mcp.add_tool(workflow_tool(TriageTicket))
    return mcp


# --8<-- [end:build]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8003)
    args = parser.parse_args()
    build().run(transport="http", host="127.0.0.1", port=args.port)
