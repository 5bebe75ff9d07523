"""``TemporalTasks``: the SEP-2663 tasks extension, backed by Temporal.

```python
from fastmcp import FastMCP
from fastmcp_temporal import TemporalTasks

mcp = FastMCP("Server")
mcp.add_extension(TemporalTasks())            # embedded Temporal + in-process worker


@mcp.tool(task=True)
async def crunch(dataset: str) -> str: ...
```

It replaces ``fastmcp_tasks.TasksExtension`` one for one: the same capability,
the same ``tasks/get|update|cancel`` methods, the same ``tools/call`` decision
(``TaskConfig.mode`` and the client's per-request opt-in), but each task is a
Temporal workflow, so it survives crashes, restarts and deploys.

With no address (argument, ``TEMPORAL_ADDRESS`` or a ``temporal.toml`` profile,
see ``connection``) the lifespan starts a local Temporal dev server; with one,
it connects and starts nothing. Either way it runs a worker in process unless
``run_worker=False`` (or ``FASTMCP_TEMPORAL_RUN_WORKER=false``): then this
server is a stateless front end, and ``fastmcp-temporal worker`` runs the legs.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import re
from collections.abc import AsyncGenerator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastmcp.server.extensions import (
    MethodBinding,
    ServerExtension,
)
from fastmcp.tools.base import Tool
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from temporalio.client import Client
from temporalio.converter import ExternalStorage, StorageDriver
from temporalio.service import TLSConfig
from temporalio.worker import Plugin as WorkerPlugin
from temporalio.worker import Worker

from fastmcp_temporal import _compat
from fastmcp_temporal.activities.progress import (
    install_progress_bridge,
    uninstall_progress_bridge,
)
from fastmcp_temporal.activities.remote_connections import RemoteServers
from fastmcp_temporal.server.core import metrics, scope
from fastmcp_temporal.server.core.codec import task_data_converter
from fastmcp_temporal.server.core.scope import task_scope
from fastmcp_temporal.server.core.settings import load_settings
from fastmcp_temporal.server.core.wire import (
    AckResult,
    GetTaskResult,
    TaskIdParams,
    UpdateTaskParams,
)
from fastmcp_temporal.server.embedded.shared import EmbeddedServer
from fastmcp_temporal.server.payloads.payload_store import (
    PayloadStoreSettings,
    with_payload_storage,
)
from fastmcp_temporal.server.payloads.payload_sweep import sweeping
from fastmcp_temporal.server.protocol import routing, wire_production
from fastmcp_temporal.server.protocol.listen import TaskListenHandler
from fastmcp_temporal.server.protocol.temporal_busy import temporal_busy_as_error
from fastmcp_temporal.server.tasks.engine import TaskEngine
from fastmcp_temporal.server.tasks.fairness import Fairness, FairnessHook
from fastmcp_temporal.server.tasks.starter import ToolOptions
from fastmcp_temporal.server.temporal import connection, telemetry
from fastmcp_temporal.server.temporal.plugin import McpTasksPlugin
from fastmcp_temporal.server.temporal.previous_queue import (
    report_unpolled_queues,
    serving_previous_queue,
)
from fastmcp_temporal.server.temporal.remote_plugin import RemoteMcpPlugin
from fastmcp_temporal.server.temporal.sigterm import sigterm_unwinds
from fastmcp_temporal.server.temporal.versioning import WorkerVersioning
from fastmcp_temporal.server.temporal.workflow_tools import workflow_tool_parts
from fastmcp_temporal.workflows.models import LegPolicy, UndeclaredInput

if TYPE_CHECKING:
    import mcp_types
    from fastmcp.server.context import Context
    from fastmcp.server.extensions import ToolCallContinuation, ToolCallOutcome

logger = logging.getLogger(__name__)

DEFAULT_TTL_MS = 900_000
DEFAULT_TASK_QUEUE = "mcp-tasks"
_TASK_METHOD_VERSIONS = frozenset(MODERN_PROTOCOL_VERSIONS)


class TemporalTasks(ServerExtension):
    """FastMCP server extension: SEP-2663 background tasks as Temporal workflows.

    Args:
        address: Temporal frontend (``host:port``). Default: ``TEMPORAL_ADDRESS``
            or the ``temporal.toml`` profile, else an embedded dev server is started.
        namespace: Temporal namespace (default ``TEMPORAL_NAMESPACE`` or ``default``).
        api_key, tls, profile: Temporal Cloud / TLS settings and the
            ``temporal.toml`` profile; they override ``temporalio.envconfig``.
        task_queue: Queue the task workflows and tool legs run on. Default
            ``mcp-tasks``; on the shared embedded server ``mcp-tasks-<server
            name>``, so two different servers started from one folder never
            run each other's legs (replicas of one server still share it).
            Tasks left on ``mcp-tasks`` from before still run: see
            ``fastmcp_temporal.server.temporal.previous_queue``.
        ttl_ms: Reported ``ttlMs``: how long a task stays readable; a task still
            running at its TTL is ended (see ``starter``).
        tools: Per-tool ``ToolOptions`` (``ttl_ms``, the legs' ``task_queue``).
        run_worker: Run a worker in this process; off for stateless front ends.
            Default ``FASTMCP_TEMPORAL_RUN_WORKER`` (true unless "false"/"0").
        tracing: OpenTelemetry: one trace from ``tools/call`` into the workflow
            and its legs (the ``otel`` extra; see ``telemetry``). With
            ``client=``, connect that client with ``telemetry.plugins()``.
        client: An already-connected client. Its converter must be pydantic-based
            and, for encryption, carry the codec: build it with
            ``fastmcp_temporal.server.core.codec.task_data_converter(key)``.
        data_dir: Where the embedded dev server keeps its SQLite file.
        ui: Start the embedded dev server's Web UI.
        query_timeout: Upper bound for each Temporal call of a ``tasks/*`` request;
            past it the request answers ``-32001`` (``server.protocol.temporal_busy``).
        leg_policy: Timeouts and retries of each tool leg.
        max_rounds: How many legs one task may run.
        encryption_key: Encrypt every payload at rest (AES-256-GCM): a 32-byte key
            as base64 or hex, or ``"id:key,id2:key2"`` to rotate (the first one
            encrypts). Default: ``FASTMCP_TEMPORAL_ENCRYPTION_KEY``. See
            ``fastmcp_temporal.server.core.codec``.
        rounds_per_run: Legs per workflow run before it continues as new.
        mrtr_first_tools: Tools whose first leg may ask for input synchronously
            (an ``InputRequiredResult`` on ``tools/call``) before the client gets
            the task; see ``fastmcp_temporal.server.protocol.mrtr``.
        mrtr_window: How long ``tools/call`` watches such a tool's first leg.
        plugins: Temporal worker plugins to run beside ours on this server's
            worker, after ``McpTasksPlugin`` (so they see the workflow tools),
            e.g. pydantic-ai's ``PydanticAIPlugin()``: see docs/guides/agents.md.
        versioning: This process's worker joins a Worker Deployment Version
            (deployment name + build id; tasks pinned to the build that started
            them by default). Default: ``TEMPORAL_DEPLOYMENT_NAME`` and
            ``TEMPORAL_WORKER_BUILD_ID`` when set, else unversioned. Only workers
            use it; see ``fastmcp_temporal.server.temporal.versioning``.
        scope_secret: Keys the scope tag in workflow ids (HMAC), so nobody can
            find a user's tasks in Temporal from their client id and subject.
            The same value on every front end, at least 16 bytes. Default:
            ``FASTMCP_TEMPORAL_SCOPE_SECRET``, else (embedded server only) a
            file generated in ``data_dir``; see ``fastmcp_temporal.server.core.scope``.
        undeclared_input: What a task does when its tool asks for input (elicitation,
            sampling, roots) that the creating client did not declare: ``"park"``
            (default, as ``fastmcp-tasks``: wait in ``input_required`` with the
            request listed and a ``statusMessage`` naming the capability, for any
            client of the caller to answer with ``tasks/update``) or ``"fail"``
            (end the task ``failed`` with ``-32021`` at once). Frozen per task when
            it is created. A workflow tool's ``ask()`` parks either way; see
            ``fastmcp_temporal.activities.input_capabilities``.
        payload_store, payload_threshold, max_payload_bytes: Where payloads
            past the threshold go (a directory, default ``<data_dir>/payloads``;
            ``"s3://bucket"``; a ``StorageDriver``), and the largest one a task
            may carry; see ``fastmcp_temporal.server.payloads.payload_store``.
        fairness: Each caller's tasks get their own Temporal fairness key, so one
            caller's backlog does not delay the others'. ``True`` (default, unless
            ``FASTMCP_TEMPORAL_FAIRNESS=false``), ``False``, or a hook
            ``(FairnessCaller) -> (key, weight) | None``; see
            ``fastmcp_temporal.server.tasks.fairness``.
        metrics_port, metrics_host: Serve Prometheus metrics (Temporal's and the
            MCP ones) on ``http://<host>:<port>/metrics``. Default
            ``FASTMCP_TEMPORAL_METRICS_PORT`` (off when unset) and ``_HOST``
            (127.0.0.1); see ``fastmcp_temporal.server.core.metrics``.
        max_open_tasks_per_caller: At most this many open tasks per caller
            (principal; anonymous callers share one), counted across replicas;
            over it ``tools/call`` answers a retryable ``-32001``. Per tool:
            ``ToolOptions(max_open_tasks_per_caller=...)``. See
            ``fastmcp_temporal.server.tasks.quota``; idempotency keys:
            ``fastmcp_temporal.server.protocol.idempotency``.
        remote_servers: Named connections to other MCP servers (``RemoteServer``
            or a factory of ``fastmcp.Client``) that workflow tools call with
            ``remote(name)``; they stay on the worker, out of history. See
            ``docs/guides/remote-mcp.md``.
    """

    identifier = TASKS_EXTENSION_ID

    def __init__(
        self,
        *,
        address: str | None = None,
        namespace: str | None = None,
        task_queue: str | None = None,
        ttl_ms: int = DEFAULT_TTL_MS,
        run_worker: bool | None = None,
        client: Client | None = None,
        data_dir: str | Path | None = None,
        ui: bool = True,
        query_timeout: timedelta = timedelta(seconds=2),
        leg_policy: LegPolicy | None = None,
        max_rounds: int = 1000,
        rounds_per_run: int = 200,
        mrtr_first_tools: Collection[str] = (),
        mrtr_window: timedelta = timedelta(seconds=5),
        worker_options: dict[str, Any] | None = None,
        plugins: Sequence[WorkerPlugin] = (),
        encryption_key: str | None = None,
        api_key: str | None = None,
        tls: bool | TLSConfig | None = None,
        profile: str | None = None,
        tools: Mapping[str, ToolOptions] | None = None,
        tracing: bool = False,
        versioning: WorkerVersioning | None = None,
        scope_secret: str | None = None,
        payload_store: str | StorageDriver | None = None,
        payload_threshold: int | None = None,
        max_payload_bytes: int | None = None,
        undeclared_input: UndeclaredInput = "park",
        fairness: bool | FairnessHook | None = None,
        metrics_port: int | None = None,
        metrics_host: str | None = None,
        max_open_tasks_per_caller: int | None = None,
        remote_servers: RemoteServers | None = None,
    ) -> None:
        if ttl_ms <= 0:
            raise ValueError("ttl_ms must be positive")
        if undeclared_input not in ("park", "fail"):
            raise ValueError('undeclared_input must be "park" or "fail"')
        self._undeclared_input: UndeclaredInput = undeclared_input
        self._metrics = metrics.MetricsEndpoint.resolve(metrics_port, metrics_host)
        if client is not None and metrics_port is not None:
            raise ValueError(
                "Pass metrics_port or client, not both: a client's Temporal runtime decides "
                "its metrics (connect it with runtime=Runtime(telemetry=...PrometheusConfig))"
            )
        self._fairness = fairness
        if max_open_tasks_per_caller is not None and max_open_tasks_per_caller <= 0:
            raise ValueError("max_open_tasks_per_caller must be positive")
        self._max_open_tasks_per_caller = max_open_tasks_per_caller
        if client is not None and encryption_key is not None:
            raise ValueError(
                "Pass encryption_key or client, not both: a client's data converter "
                "decides its encryption (build it with task_data_converter(key))"
            )
        self._encryption_key = encryption_key
        self._scope_secret = scope.configured_secret(scope_secret)
        self._connection: dict[str, Any] = {"address": address, "namespace": namespace}
        self._connection |= {"api_key": api_key, "tls": tls, "profile": profile}
        self._task_queue = task_queue
        self._ttl_ms = ttl_ms
        if run_worker is None:
            run_worker = load_settings().run_worker
        self._run_worker = run_worker
        self._worker_only = False
        self._tools = dict(tools or {})
        self._tracing = tracing
        self._client = client
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self._payload_options: dict[str, Any] = {
            "store": payload_store,
            "threshold": payload_threshold,
            "max_payload_bytes": max_payload_bytes,
        }
        self._ui = ui
        self._query_timeout = query_timeout
        self._leg_policy = leg_policy or LegPolicy()
        self._max_rounds = max_rounds
        self._rounds_per_run = rounds_per_run
        self._mrtr_first_tools = frozenset(mrtr_first_tools)
        self._mrtr_window = mrtr_window
        self._worker_options = dict(worker_options or {})
        self._plugins = tuple(plugins)
        self._remote_servers = dict(remote_servers or {})
        self._versioning = versioning
        self._engine: TaskEngine | None = None
        self._dev_server: EmbeddedServer | None = None

    def clone(self) -> TemporalTasks:
        """A copy for another server; a connected client and plugins are shared, never copied."""
        client, plugins = self._client, self._plugins
        self._client, self._plugins = None, ()
        try:
            twin = super().clone()
        finally:
            self._client, self._plugins = client, plugins
        assert isinstance(twin, TemporalTasks)
        twin._client, twin._plugins = client, plugins
        twin._engine = None
        twin._dev_server = None
        return twin

    @property
    def engine(self) -> TaskEngine:
        if self._engine is None:
            raise MCPError(code=-32603, message="The Temporal tasks extension is not running")
        return self._engine

    @property
    def dev_server(self) -> EmbeddedServer | None:
        """The embedded Temporal this extension uses (started or joined), while it runs."""
        return self._dev_server

    @property
    def task_queue(self) -> str:
        """The queue tasks run on (see ``task_queue`` in the class docstring)."""
        if self._task_queue is not None:
            return self._task_queue
        if self._dev_server is None:
            return DEFAULT_TASK_QUEUE
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.server.name).strip("-")
        return f"{DEFAULT_TASK_QUEUE}-{name or 'server'}"

    def settings(self) -> dict[str, Any]:
        return {}

    def methods(self) -> Sequence[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskIdParams, self._handle_get, _TASK_METHOD_VERSIONS),
            MethodBinding(
                "tasks/update", UpdateTaskParams, self._handle_update, _TASK_METHOD_VERSIONS
            ),
            MethodBinding("tasks/cancel", TaskIdParams, self._handle_cancel, _TASK_METHOD_VERSIONS),
        ]

    # -- tasks/* --------------------------------------------------------------

    async def _handle_get(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> GetTaskResult:
        with metrics.request("tasks/get"), temporal_busy_as_error("tasks/get"):
            routing.check_task_request(ctx, params.task_id)
            return await self.engine.get(params.task_id, task_scope())

    async def _handle_update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams
    ) -> AckResult:
        with metrics.request("tasks/update"), temporal_busy_as_error("tasks/update"):
            routing.check_task_request(ctx, params.task_id)
            await self.engine.update(params.task_id, task_scope(), params.input_responses)
        return AckResult()

    async def _handle_cancel(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> AckResult:
        with metrics.request("tasks/cancel"), temporal_busy_as_error("tasks/cancel"):
            routing.check_task_request(ctx, params.task_id)
            await self.engine.cancel(params.task_id, task_scope())
        return AckResult()

    # -- tools/call -----------------------------------------------------------

    async def intercept_tool_call(
        self,
        params: mcp_types.CallToolRequestParams,
        context: Context,
        call_next: ToolCallContinuation,
    ) -> ToolCallOutcome:
        """Run this ``tools/call`` as a task, or pass it through (see ``routing``)."""
        return await routing.route_tool_call(
            self.engine,
            params,
            context,
            call_next,
            mrtr_first_tools=self._mrtr_first_tools,
            mrtr_window=self._mrtr_window,
        )

    # -- lifespan -------------------------------------------------------------

    @asynccontextmanager
    async def lifespan(self) -> AsyncGenerator[None, None]:
        """Connect (starting the embedded dev server if needed), run the worker."""
        try:
            async with self._running():
                yield
        finally:
            # The client is released with ``_running``'s frame: collect it now,
            # while the interpreter is whole. Collected during finalization it
            # can abort the process (temporalio/sdk-python#300), which is how a
            # server stopped by SIGTERM ended with SIGABRT instead of 143.
            gc.collect()

    @asynccontextmanager
    async def _running(self) -> AsyncGenerator[None, None]:
        async with contextlib.AsyncExitStack() as stack:
            payloads = PayloadStoreSettings.resolve(
                data_dir=self._data_dir or load_settings().data_dir, **self._payload_options
            )
            storage = await payloads.open(stack)
            if self._client is not None:
                client = with_payload_storage(self._client, storage)
            else:
                client = await self._connect(stack, storage)
                if self._dev_server is None:
                    payloads.announce_local_default()
            versioning = self._worker_versioning()
            task_queue = self.task_queue
            self._engine = TaskEngine(
                client,
                task_queue=task_queue,
                ttl_ms=self._ttl_ms,
                query_timeout=self._query_timeout,
                leg_policy=self._leg_policy,
                max_rounds=self._max_rounds,
                rounds_per_run=self._rounds_per_run,
                undeclared_input=self._undeclared_input,
                # An eager start hands the new task to this process's worker and
                # pins it to this build even when another version is current
                # (measured on Server 1.32): a versioned fleet lets Temporal route.
                eager_start=self._run_worker and versioning is None,
                tools=self._tools,
                scope_secret=scope.resolve_secret(
                    self._scope_secret,
                    embedded_data_dir=(
                        Path(self._dev_server.data_dir) if self._dev_server else None
                    ),
                    warn=not self._worker_only and self.server.auth is not None,
                ),
                max_payload_bytes=payloads.max_payload_bytes,
                max_open_tasks_per_caller=self._max_open_tasks_per_caller,
            )
            self._engine.starter.fairness = Fairness.resolve(
                self._fairness, scope_secret=self._engine.scope_secret
            )
            await stack.enter_async_context(
                metrics.recording(client, task_queue, count_open_tasks=not self._worker_only)
            )
            wire_production.install()
            stack.callback(wire_production.uninstall)
            # Task status pushed on subscriptions/listen (see ``listen``).
            _compat.serve_listen(self.server, TaskListenHandler(lambda: self.engine))
            install_progress_bridge()
            stack.callback(uninstall_progress_bridge)
            if self._run_worker:
                stack.enter_context(sigterm_unwinds())
                options: dict[str, Any] = {
                    "max_heartbeat_throttle_interval": timedelta(seconds=1),
                    "graceful_shutdown_timeout": timedelta(seconds=2),
                    **self._worker_options,
                }
                workflows, activities = await workflow_tool_parts(self.server)

                def new_worker(queue: str) -> Worker:
                    plugin = McpTasksPlugin(
                        self.server,
                        workflows=workflows,
                        activities=activities,
                        versioning=versioning,
                        max_payload_bytes=payloads.max_payload_bytes,
                    )
                    plugins: list[WorkerPlugin] = [plugin]
                    if self._remote_servers:
                        plugins.append(RemoteMcpPlugin(self._remote_servers))
                    plugins.extend(self._plugins)
                    return Worker(client, task_queue=queue, plugins=plugins, **options)

                await stack.enter_async_context(new_worker(task_queue))
                await stack.enter_async_context(sweeping(payloads, storage, client))
                if self._dev_server is not None and self._task_queue is None:
                    tools = {c.name for c in await self.server.get_tasks() if isinstance(c, Tool)}
                    await stack.enter_async_context(
                        serving_previous_queue(client, tools, new_worker)
                    )
                    await report_unpolled_queues(
                        client, task_queue, tools, Path(self._dev_server.data_dir)
                    )
            try:
                yield
            finally:
                self._engine = None

    def serve_as_worker(
        self,
        *,
        task_queue: str | None = None,
        connection: Mapping[str, Any] | None = None,
        versioning: WorkerVersioning | None = None,
        payload_store: str | None = None,
        data_dir: str | Path | None = None,
        **worker_options: Any,
    ) -> None:
        """Make this a worker process (``fastmcp-temporal worker``): it must join a Temporal."""
        self._run_worker = self._worker_only = True
        self._versioning = versioning or self._versioning
        if payload_store is not None:
            self._payload_options["store"] = payload_store
        self._data_dir = Path(data_dir) if data_dir is not None else self._data_dir
        self._task_queue = task_queue or self._task_queue
        self._connection |= {k: v for k, v in (connection or {}).items() if v is not None}
        self._worker_options.update(worker_options)

    def _worker_versioning(self) -> WorkerVersioning | None:
        """The worker's version: the argument, else the environment; front ends have none."""
        if not self._run_worker:
            return None
        return self._versioning or WorkerVersioning.resolve()

    async def _connect(self, stack: contextlib.AsyncExitStack, storage: ExternalStorage) -> Client:
        """The configured Temporal, else the data directory's shared embedded one.

        A worker process (``serve_as_worker``) joins a running embedded server
        but never starts one: it would die with the worker.
        """
        client, self._dev_server = await connection.connect_or_join(
            stack,
            connection.resolve(**self._connection),
            data_dir=self._data_dir,
            start=not self._worker_only,
            ui=self._ui,
            data_converter=task_data_converter(self._encryption_key, payload_storage=storage),
            plugins=telemetry.plugins() if self._tracing else (),
            runtime=self._metrics.runtime() if self._metrics else None,
        )
        if self._dev_server is not None:
            stack.callback(setattr, self, "_dev_server", None)
        return client
