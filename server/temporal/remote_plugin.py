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
follow remote SEP-2663 tasks as well as synchronous calls. The connections the
worker opened are closed when it stops: a stdio server it started ends with it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from temporalio.plugin import SimplePlugin

from fastmcp_temporal.activities.remote_mcp import RemoteMcpActivities, RemoteServers


class RemoteMcpPlugin(SimplePlugin):
    """The remote-call activities, bound to ``servers`` (name -> connection)."""

    def __init__(self, servers: RemoteServers) -> None:
        # Not ``self.activities``: ``SimplePlugin`` keeps its activity list under that name.
        self._remote = RemoteMcpActivities(servers)
        super().__init__(
            "fastmcp_temporal.RemoteMcpPlugin",
            activities=self._remote.activities,
            run_context=self._closing_connections,
        )

    @contextlib.asynccontextmanager
    async def _closing_connections(self) -> AsyncIterator[None]:
        """Around the worker's run: its activities have ended when this exits."""
        try:
            yield
        finally:
            await self._remote.connections.close()
