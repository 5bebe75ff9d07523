"""An OpenAI Agents SDK agent whose tools are other MCP servers' tools, two ways side by side.

Its own module, as a workflow's should be: the workflow sandbox re-imports it.

- ``service_status`` is a function tool (it runs in the workflow) that calls the
  support desk through our ``remote()``: the connection named ``"desk"`` is the
  server's (``TemporalTasks(remote_servers=...)``), each call one activity.
- ``temporal_mcp_server("docs")`` is the OpenAI plugin's: the agent lists the
  docs server's tools to the model and calls the one it picks, each an activity,
  through the factory named ``"docs"`` on ``OpenAIAgentsPlugin(mcp_servers=...)``.
"""

# --8<-- [start:workflow]
from agents import Agent, Runner, function_tool
from temporalio import workflow
from temporalio.openai_agents.workflow import temporal_mcp_server

from fastmcp_temporal.workflows import remote


@function_tool
async def service_status(service: str) -> str:
    """The service's status, from the support desk's MCP server."""
    result = await remote("desk").call_tool("service_status", {"service": service})
    return result.content[0].text


@workflow.defn
class SupportAgent:
    """Answer a support question with the desk's status and the docs."""

    @workflow.run
    async def run(self, question: str) -> str:
        agent = Agent(
            name="support",
            instructions="Answer support questions.",
            model="gpt-5",
            tools=[service_status],  # our remote(): the recommended way
            mcp_servers=[temporal_mcp_server("docs")],  # the OpenAI plugin's MCP server
        )
        return str((await Runner.run(agent, question)).final_output)


# --8<-- [end:workflow]
