"""Hosting a server's task legs in a Temporal worker of your own."""

# --8<-- [start:worker]
from fastmcp import FastMCP
from temporalio.client import Client
from temporalio.worker import Worker

from fastmcp_temporal import McpTasksPlugin


async def run_legs(mcp: FastMCP, address: str, task_queue: str = "mcp-tasks") -> None:
    """Run ``mcp``'s task workflows and tool legs until cancelled."""
    client = await Client.connect(address, plugins=[McpTasksPlugin(mcp)])
    await Worker(client, task_queue=task_queue).run()  # the worker inherits the plugin


# --8<-- [end:worker]
