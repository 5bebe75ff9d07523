"""The worker a ``TemporalTasks`` lifespan runs in its own process.

One recipe builds every worker of the process: the one on the server's task
queue and, after an upgrade on the shared embedded server, the one that drains
the queue tasks ran on before (``previous_queue``), so both run the same
workflows, legs and plugins. The plugin order is part of the recipe:
``McpTasksPlugin`` first (it registers the workflow tools the others may wrap),
then ``RemoteMcpPlugin`` when the server names remote MCP servers, then the
user's plugins (e.g. pydantic-ai's), which see everything ours registered.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools.base import Tool
from temporalio.client import Client
from temporalio.worker import Plugin as WorkerPlugin
from temporalio.worker import Worker

from fastmcp_temporal.activities.leg_news import LegNews
from fastmcp_temporal.activities.remote_connections import RemoteServers
from fastmcp_temporal.server.core.credentials import CredentialPolicy
from fastmcp_temporal.server.temporal.plugin import McpTasksPlugin
from fastmcp_temporal.server.temporal.previous_queue import (
    report_unpolled_queues,
    serving_previous_queue,
)
from fastmcp_temporal.server.temporal.remote_plugin import RemoteMcpPlugin
from fastmcp_temporal.server.temporal.sandbox_errors import explain
from fastmcp_temporal.server.temporal.versioning import WorkerVersioning
from fastmcp_temporal.server.temporal.workflow_tools import workflow_tool_parts
from fastmcp_temporal.timing import TICK

#: A leg's progress reaches ``tasks/get`` through its heartbeats: at most a tick
#: (``timing.TICK``) late. A stopping worker (SIGTERM too, see ``sigterm``) gives running legs two
#: seconds, then hands them back to Temporal. ``worker_options`` override either.
DEFAULT_WORKER_OPTIONS: Mapping[str, Any] = {
    "max_heartbeat_throttle_interval": TICK,
    "graceful_shutdown_timeout": timedelta(seconds=2),
}


class InProcessWorkers:
    """Builds this process's workers, all alike; ``new(queue)`` is one, not yet running."""

    def __init__(
        self,
        server: FastMCP,
        client: Client,
        *,
        workflows: Sequence[type],
        activities: Sequence[Callable[..., Any]],
        versioning: WorkerVersioning | None,
        max_payload_bytes: int,
        remote_servers: RemoteServers,
        plugins: Sequence[WorkerPlugin],
        worker_options: Mapping[str, Any],
        credentials: CredentialPolicy,
        leg_news: LegNews,
    ) -> None:
        self._server = server
        self._leg_news = leg_news
        self._client = client
        self._workflows = workflows
        self._activities = activities
        self._versioning = versioning
        self._max_payload_bytes = max_payload_bytes
        self._remote_servers = remote_servers
        self._plugins = tuple(plugins)
        self._options = {**DEFAULT_WORKER_OPTIONS, **worker_options}
        self._credentials = credentials

    @classmethod
    async def for_server(
        cls,
        server: FastMCP,
        client: Client,
        *,
        versioning: WorkerVersioning | None,
        max_payload_bytes: int,
        remote_servers: RemoteServers,
        plugins: Sequence[WorkerPlugin],
        worker_options: Mapping[str, Any],
        credentials: CredentialPolicy,
        leg_news: LegNews,
    ) -> InProcessWorkers:
        """The recipe for ``server``'s workers, with its workflow tools read once."""
        workflows, activities = await workflow_tool_parts(server)
        return cls(
            server,
            client,
            workflows=workflows,
            activities=activities,
            versioning=versioning,
            max_payload_bytes=max_payload_bytes,
            remote_servers=remote_servers,
            plugins=plugins,
            worker_options=worker_options,
            credentials=credentials,
            leg_news=leg_news,
        )

    def new(self, queue: str) -> Worker:
        plugin = McpTasksPlugin(
            self._server,
            workflows=self._workflows,
            activities=self._activities,
            versioning=self._versioning,
            max_payload_bytes=self._max_payload_bytes,
            credentials=self._credentials,
            leg_news=self._leg_news,
        )
        plugins: list[WorkerPlugin] = [plugin]
        if self._remote_servers:
            plugins.append(RemoteMcpPlugin(self._remote_servers))
        plugins.extend(self._plugins)
        try:
            return Worker(self._client, task_queue=queue, plugins=plugins, **self._options)
        except RuntimeError as err:
            # "Failed validating workflow X" hides which import the sandbox refused.
            if (explained := explain(err)) is not None:
                raise explained from err
            raise

    @contextlib.asynccontextmanager
    async def serving_previous_queue(self, task_queue: str, data_dir: Path) -> AsyncIterator[None]:
        """While inside: the pre-upgrade queue is drained, and queues nobody polls are reported.

        For the shared embedded server with the default queue only (see ``previous_queue``).
        """
        tools = {c.name for c in await self._server.get_tasks() if isinstance(c, Tool)}
        async with serving_previous_queue(self._client, tools, self.new):
            await report_unpolled_queues(self._client, task_queue, tools, data_dir)
            yield
