"""Calling other MCP servers: a workflow tool whose steps are remote tool calls.

Its own module, as a workflow's should be: the workflow sandbox re-imports it.
``remote_servers.py`` serves it with the connections it names.
"""

# --8<-- [start:workflow]
from temporalio import workflow

from fastmcp_temporal.workflows import RemoteTaskError, remote


@workflow.defn
class Triage:
    """Triage an incident: search, then deploy the fix with an approval."""

    @workflow.run
    async def run(self, incident: str) -> str:
        search = remote("search")
        tools = await search.list_tools()  # one activity
        if "web_search" not in {tool.name for tool in tools}:
            return "search has no web_search"
        hits = await search.call_tool("web_search", {"q": incident})  # sync tool
        if hits.is_error:  # returned, not raised
            return "search failed: " + hits.content[0].text
        try:
            deployed = await remote("builds").call_tool("deploy", {"ref": "fix"})  # a task
        except RemoteTaskError as err:
            return f"deploy {err.status}: {err.message}"
        return deployed.content[0].text


# --8<-- [end:workflow]
