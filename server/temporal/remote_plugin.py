"""``RemoteMcpPlugin``: a worker's named connections to other MCP servers.

```python
worker = Worker(client, task_queue="mcp-tasks", plugins=[
    McpTasksPlugin(mcp, workflows=..., activities=...),
    RemoteMcpPlugin({"search": RemoteServer.http(url, bearer_token=token)}),
])
```

``TemporalTasks(remote_servers=...)`` adds it to the workers it runs. It is
``temporalio-mcp``'s ``MCPPlugin`` idea (connections configured on the worker,
workflows name them) with the activities of ``activities.remote_mcp``, which
follow remote SEP-2663 tasks as well as synchronous calls.
"""

from __future__ import annotations

from temporalio.plugin import SimplePlugin

from fastmcp_temporal.activities.remote_mcp import RemoteMcpActivities, RemoteServers


class RemoteMcpPlugin(SimplePlugin):
    """The remote-call activities, bound to ``servers`` (name -> connection)."""

    def __init__(self, servers: RemoteServers) -> None:
        self.activities = RemoteMcpActivities(servers)
        super().__init__("fastmcp_temporal.RemoteMcpPlugin", activities=self.activities.activities)
