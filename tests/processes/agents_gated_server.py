"""The gated agents (``agents_gated``) as task tools, with their frameworks' plugins.

``tests.processes.worker`` runs it as a worker process: ``plugins()`` go to its
``TemporalTasks`` beside ours.
"""

from __future__ import annotations

from datetime import timedelta

from fastmcp import FastMCP
from temporalio.langgraph import LangGraphPlugin
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents.testing import TestModelProvider
from temporalio.plugin import SimplePlugin

from fastmcp_temporal import workflow_tool
from tests.processes.agents_gated import (
    GatedGraph,
    GatedOpenAIAgent,
    LoggedModel,
    customer_plan,
    gated_graph,
)

mcp = FastMCP("agents-gated")
mcp.add_tool(workflow_tool(GatedOpenAIAgent, name="gated_openai", activities=[customer_plan]))
mcp.add_tool(workflow_tool(GatedGraph, name="gated_graph"))


def plugins() -> list[SimplePlugin]:
    return [
        OpenAIAgentsPlugin(
            model_provider=TestModelProvider(LoggedModel()),
            model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30)),
        ),
        LangGraphPlugin(graphs={"gated": gated_graph()}),
    ]
