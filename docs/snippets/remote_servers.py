"""Calling other MCP servers: the worker's named connections, and the tool that uses them.

SEARCH_TOKEN=... CI_KEY=... python docs/snippets/remote_servers.py

Building the server connects to nothing: the worker opens a connection when a
step first uses it.
"""

# --8<-- [start:server]
import os

from fastmcp import FastMCP
from remote_triage import Triage  # its own module: the sandbox re-imports it

from fastmcp_temporal import RemoteServer, TemporalTasks, workflow_tool

mcp = FastMCP("triage")
mcp.add_extension(
    TemporalTasks(
        remote_servers={
            "search": RemoteServer.http(
                "https://search.example/mcp", bearer_token=os.environ["SEARCH_TOKEN"]
            ),
            "builds": RemoteServer.http(
                "https://ci.example/mcp", headers={"X-Api-Key": os.environ["CI_KEY"]}
            ),
            "files": RemoteServer.stdio("uvx", ["some-mcp-server"], env={"ROOT": "/srv"}),
        }
    )
)
mcp.add_tool(workflow_tool(Triage))
# --8<-- [end:server]

if __name__ == "__main__":
    mcp.run(transport="http", host="127.0.0.1", port=8004)
