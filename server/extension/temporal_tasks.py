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

import weakref
from collections.abc import AsyncGenerator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastmcp.server.extensions import MethodBinding, ServerExtension
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID
from temporalio.client import Client
from temporalio.converter import StorageDriver
from temporalio.service import TLSConfig
from temporalio.worker import Plugin as WorkerPlugin

from fastmcp_temporal.activities.remote_connections import RemoteServers
from fastmcp_temporal.server.embedded.shared import EmbeddedServer
from fastmcp_temporal.server.extension.lifespan import Live, running
from fastmcp_temporal.server.extension.options import DEFAULT_TTL_MS, ExtensionOptions
from fastmcp_temporal.server.protocol import routing
from fastmcp_temporal.server.protocol.portable_sessions import serve_on
from fastmcp_temporal.server.protocol.task_methods import TaskMethods
from fastmcp_temporal.server.tasks.engine import TaskEngine
from fastmcp_temporal.server.tasks.fairness import FairnessHook
from fastmcp_temporal.server.tasks.starter import ToolOptions
from fastmcp_temporal.server.tasks.undelivered import HostTimeout
from fastmcp_temporal.server.temporal.versioning import WorkerVersioning
from fastmcp_temporal.workflows.models import LegPolicy, UndeclaredInput

if TYPE_CHECKING:
    import mcp_types
    from fastmcp import FastMCP
    from fastmcp.server.context import Context
    from fastmcp.server.extensions import ToolCallContinuation, ToolCallOutcome


#: ``TemporalTasks``'s parameters that are live objects (shared, never copied), not options.
_LIVE = frozenset({"self", "client", "plugins"})
#: Every ``TemporalTasks`` of the process, weakly (``registered_on``).
_made: weakref.WeakSet[TemporalTasks] = weakref.WeakSet()


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
            Default ``FASTMCP_TEMPORAL_QUERY_TIMEOUT`` seconds, else 2 s.
        leg_policy: Timeouts and retries of each tool leg.
        max_rounds: How many legs one task may run.
        encryption_key: Encrypt every payload at rest (AES-256-GCM): a 32-byte key
            as base64 or hex, or ``"id:key,id2:key2"`` to rotate (the first one
            encrypts). Default: ``FASTMCP_TEMPORAL_ENCRYPTION_KEY``. See
            ``fastmcp_temporal.server.core.codec``.
        credentials_key_dir: With a Temporal address and no encryption key, seal
            callers' token and headers under this directory's ``credentials-key``
            (created on first use) as the embedded default does in its data
            directory, instead of refusing to start an authenticating server: for
            a Temporal that is an embedded dev server started elsewhere (the pytest
            plugin's ``temporal_tasks`` passes the session's data directory).
            Every front end and worker of those tasks names the same directory.
            Ignored when this process runs the embedded server (its own data
            directory's key) or a key encrypts every payload. Default:
            ``FASTMCP_TEMPORAL_CREDENTIALS_KEY_DIR``; see
            ``fastmcp_temporal.server.core.credentials``.
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
            over it ``tools/call`` answers a retryable ``-32001`` (default
            ``FASTMCP_TEMPORAL_MAX_OPEN_TASKS_PER_CALLER``, else none). Per tool:
            ``ToolOptions(max_open_tasks_per_caller=...)``. See
            ``fastmcp_temporal.server.tasks.quota``; idempotency keys:
            ``fastmcp_temporal.server.protocol.idempotency``.
        remote_servers: Named connections to other MCP servers (``RemoteServer``
            or a factory of ``fastmcp.Client``) that workflow tools call with
            ``remote(name)``; they stay on the worker, out of history. See
            ``docs/guides/remote-mcp.md``.
        durable_sync_calls: A ``tools/call`` of a ``task=True`` tool from a client
            that did not opt in to the tasks extension starts the same task
            workflow and answers when the task ends (default ``True``, unless
            ``FASTMCP_TEMPORAL_DURABLE_SYNC_CALLS=false``); ``False`` runs such
            calls inline, as ``fastmcp-tasks`` does. Per tool:
            ``ToolOptions(durable_sync_calls=...)``. See
            ``fastmcp_temporal.server.protocol.sync_calls``.
        keepalive_s: A waiting plain call whose client sent a ``progressToken``
            hears from the server at least this often, even through a silent
            body or a worker being replaced (default ``FASTMCP_TEMPORAL_KEEPALIVE_S``,
            else 15 s). See ``fastmcp_temporal.server.protocol.call_waits``.
        wait_reads_per_second: The most Temporal reads a second this front end
            makes for its waiting plain calls, however many wait (default
            ``FASTMCP_TEMPORAL_WAIT_READS_PER_SECOND``, else 50).
        drain_grace_s: On SIGTERM, how long the waiting plain calls of an HTTP
            front end get to end before each is answered ``-32002`` (its task goes
            on); new ones are refused meanwhile (default
            ``FASTMCP_TEMPORAL_DRAIN_GRACE_S``, else 30 s). See
            ``fastmcp_temporal.server.extension.drain``.
        stuck_call_timeout_s: A waiting plain call whose task's body keeps
            failing this long (a workflow task failing again and again, an
            activity retrying, an activity type or a task queue nobody serves)
            ends with ``-32004`` naming the task and the cause, while the task
            keeps retrying (default ``FASTMCP_TEMPORAL_STUCK_CALL_TIMEOUT_S``,
            else 30 s). See ``fastmcp_temporal.server.tasks.stuck_bodies``.
        session_max_age_s: How long a 2025-xx session id minted here is served by
            any front end of the deployment (default
            ``FASTMCP_TEMPORAL_SESSION_MAX_AGE_S``, else 24 h): the id carries it, and
            every front end applies it. See ``fastmcp_temporal.server.protocol.sessions``.
        on_host_timeout: What a host's timeout cancel ("Request timed out") does to a
            plain call's task: ``"detach"`` (default, unless
            ``FASTMCP_TEMPORAL_ON_HOST_TIMEOUT``): it runs on, and the same call made
            again attaches to it; ``"cancel"``: cancelled, as a person's cancel. See
            ``fastmcp_temporal.server.protocol.peer_cancels``.
        host_limits: Hard limits of hosts on one tool call, in seconds, by
            ``clientInfo`` name prefix (``"*"``: any other client; ``0``: none),
            over the built-in table (``server.protocol.host_limits``; default
            ``FASTMCP_TEMPORAL_HOST_LIMITS``). A plain call from such a host is
            answered before the limit: the work goes on, and calling again with the
            same arguments returns its result (``server.protocol.early_answers``).
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
        query_timeout: timedelta | None = None,
        leg_policy: LegPolicy | None = None,
        max_rounds: int = 1000,
        rounds_per_run: int = 200,
        mrtr_first_tools: Collection[str] = (),
        mrtr_window: timedelta = timedelta(seconds=5),
        worker_options: dict[str, Any] | None = None,
        plugins: Sequence[WorkerPlugin] = (),
        encryption_key: str | None = None,
        credentials_key_dir: str | Path | None = None,
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
        durable_sync_calls: bool | None = None,
        keepalive_s: float | None = None,
        wait_reads_per_second: int | None = None,
        drain_grace_s: float | None = None,
        stuck_call_timeout_s: float | None = None,
        session_max_age_s: float | None = None,
        on_host_timeout: HostTimeout | None = None,
        host_limits: Mapping[str, float] | None = None,
    ) -> None:
        arguments = dict(locals())
        # Every parameter but the live objects is an option: one model checks them all.
        self._options = ExtensionOptions.from_arguments(
            client_given=client is not None,
            **{name: value for name, value in arguments.items() if name not in _LIVE},
        )
        self._client = client
        self._plugins = tuple(plugins)
        self._live = Live()
        _made.add(self)

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
        twin._live = Live()
        _made.add(twin)
        return twin

    @property
    def engine(self) -> TaskEngine:
        return self._live.running_engine()

    @property
    def dev_server(self) -> EmbeddedServer | None:
        """The embedded Temporal this extension uses (started or joined), while it runs."""
        return self._live.dev_server

    @property
    def task_queue(self) -> str:
        """The queue tasks run on (see ``task_queue`` in the class docstring)."""
        return self._options.queue(self.server.name, embedded=self._live.dev_server is not None)

    def _worker_versioning(self) -> WorkerVersioning | None:
        """This process's worker version, for ``fastmcp-temporal worker``'s first log line."""
        return self._options.worker_versioning()

    def settings(self) -> dict[str, Any]:
        return {}

    def methods(self) -> Sequence[MethodBinding]:
        """``tasks/get|update|cancel`` (see ``server.protocol.task_methods``).

        Asked once, as the extension is added to its server: also where this server's
        HTTP apps get the sealed-session seam (``portable_sessions.serve_on``; FastMCP
        offers an extension no other moment that knows the server before its apps).
        """
        serve_on(self.server, self._live.seam)
        return TaskMethods(lambda: self.engine).bindings()

    # -- tools/call -----------------------------------------------------------

    async def intercept_tool_call(
        self,
        params: mcp_types.CallToolRequestParams,
        context: Context,
        call_next: ToolCallContinuation,
    ) -> ToolCallOutcome:
        """Run this ``tools/call`` as a task, or pass it through (see ``routing``)."""
        return await routing.route_tool_call(
            self._live.running_waits(),
            params,
            context,
            call_next,
            mrtr_first_tools=self._options.mrtr_first_tools,
            mrtr_window=self._options.mrtr_window,
            durable_sync_calls=self._durable_sync_calls,
        )

    def _durable_sync_calls(self, tool_name: str) -> bool:
        """Whether a call of ``tool_name`` without the opt-in runs as a task (the switches)."""
        per_tool = self._options.tools.get(tool_name)
        if per_tool is not None and per_tool.durable_sync_calls is not None:
            return per_tool.durable_sync_calls
        return self._options.durable_sync_calls

    # -- lifespan -------------------------------------------------------------

    @asynccontextmanager
    async def lifespan(self) -> AsyncGenerator[None, None]:
        """Connect (starting the embedded dev server if needed), run the worker."""
        # The environment as it is now counts: a launcher may set a variable after
        # TemporalTasks(...) (the arguments still win).
        self._options = self._options.at_start()
        try:
            async with running(
                self.server, self._options, self._live, client=self._client, plugins=self._plugins
            ):
                yield
        finally:
            self._live.release_own_connection()

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
        self._options = self._options.as_worker(
            task_queue=task_queue,
            connection=connection,
            versioning=versioning,
            payload_store=payload_store,
            data_dir=data_dir,
            worker_options=worker_options,
        )


def registered_on(server: FastMCP) -> TemporalTasks | None:
    """The ``TemporalTasks`` ``server.add_extension()`` registered, if any (what
    ``fastmcp-temporal worker`` runs; FastMCP has no public lookup by identifier)."""
    for extension in list(_made):
        try:
            if extension.server is server:
                return extension
        except RuntimeError:  # made, never registered
            continue
    return None
