"""What a running ``TemporalTasks`` holds, from connecting to Temporal to the last leg.

In order: the payload store opens; the extension connects to its Temporal (or
starts / joins the shared embedded one, see ``connection``); the task engine is
built, with this process's policy for callers' credentials (``credentials``:
sealed, encrypted with everything, or refused); the metrics are recorded; the
MCP side is installed (``subscriptions/listen``, sealed 2025-xx session ids and
their shared logouts, the waiting calls and their drain on SIGTERM); unless this
server is a stateless front end, the in-process worker runs with the payload
sweeper and, after an upgrade, a worker draining the previous queue; then the
start-up line says where it all is (``startup_line``). Everything unwinds in
reverse when the server stops, so the worker drains before the client goes away.

``running`` composes those parts on one exit stack, each a function that says why
it stands where it does: ``_open_client`` (the payload store and the client),
``_start_engine`` (the engine, its fairness, credentials and metrics),
``_serve_front_end`` (listen, SIGTERM, the waiting calls, their drain, the
sessions and their logouts) and ``_run_worker`` (the workers and the sweeper).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import weakref
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from fastmcp import FastMCP
from mcp.shared.exceptions import MCPError
from temporalio.client import Client
from temporalio.converter import ExternalStorage
from temporalio.service import ServiceClient
from temporalio.worker import Plugin as WorkerPlugin

from fastmcp_temporal import _compat
from fastmcp_temporal.activities.leg_news import LegNews
from fastmcp_temporal.server.core import metrics, scope
from fastmcp_temporal.server.core.codec import task_data_converter
from fastmcp_temporal.server.core.credentials import resolve_policy
from fastmcp_temporal.server.core.settings import revealed
from fastmcp_temporal.server.core.task_payloads import with_plugin_payloads
from fastmcp_temporal.server.embedded.shared import EmbeddedServer
from fastmcp_temporal.server.extension import startup_line
from fastmcp_temporal.server.extension.drain import SigtermDrain, exits_cleanly
from fastmcp_temporal.server.extension.options import ExtensionOptions
from fastmcp_temporal.server.payloads.payload_store import (
    PayloadStoreSettings,
    with_payload_storage,
)
from fastmcp_temporal.server.payloads.payload_sweep import sweeping
from fastmcp_temporal.server.protocol.call_waits import WaitingCalls
from fastmcp_temporal.server.protocol.listen import TaskListenHandler
from fastmcp_temporal.server.protocol.portable_sessions import SessionSeam
from fastmcp_temporal.server.protocol.sessions import SessionSeal
from fastmcp_temporal.server.tasks.engine import TaskEngine
from fastmcp_temporal.server.tasks.fairness import Fairness, partition_watch
from fastmcp_temporal.server.temporal import connection, telemetry
from fastmcp_temporal.server.temporal.in_process_worker import InProcessWorkers
from fastmcp_temporal.server.temporal.versioning import WorkerVersioning

#: Connections released by a lifespan but not yet collected (see ``release_own_connection``).
_released_connections: weakref.WeakSet[ServiceClient] = weakref.WeakSet()


def _collect_at_exit(connection: ServiceClient) -> None:
    _released_connections.add(connection)
    atexit.unregister(_collect_released_connections)  # registered once, however many
    atexit.register(_collect_released_connections)


def _collect_released_connections() -> None:
    if _released_connections:
        gc.collect()


@dataclass
class Live:
    """What the extension reads while its lifespan runs; empty before and after."""

    engine: TaskEngine | None = None
    #: The durable plain calls waiting here (``call_waits``).
    waits: WaitingCalls | None = None
    #: The embedded Temporal in use (started or joined); ``None`` for a configured one.
    dev_server: EmbeddedServer | None = None
    #: The connection this lifespan opened itself (not a client it was given), weakly.
    own_connection: weakref.ref[ServiceClient] | None = None
    #: This server's HTTP sessions (``portable_sessions``): sealed while the lifespan runs.
    seam: SessionSeam = field(default_factory=SessionSeam)

    def release_own_connection(self) -> None:
        """Have the connection this lifespan opened collected while the interpreter is whole.

        Released with ``running``'s frame, it may sit in a reference cycle; collected
        during the interpreter's finalization, its Rust side can abort the process
        (temporalio/sdk-python#300: a SIGTERM'd server ended with SIGABRT instead of
        143 about one run in six). Only a connection of our own counts: a client the
        user passed in stays theirs. The full ``gc.collect()`` that frees it runs once,
        at exit (``atexit`` runs before finalization), and only if such a connection is
        still alive then: it costs time in proportion to the whole heap, a quarter of a
        test process's CPU when every lifespan did one, a twentieth of the suite's
        when every lifespan with a connection of its own did.
        """
        connection, self.own_connection = self.own_connection, None
        if connection is not None and (alive := connection()) is not None:
            _collect_at_exit(alive)

    def running_engine(self) -> TaskEngine:
        if self.engine is None:
            raise MCPError(code=-32603, message="The Temporal tasks extension is not running")
        return self.engine

    def running_waits(self) -> WaitingCalls:
        if self.waits is None:
            raise MCPError(code=-32603, message="The Temporal tasks extension is not running")
        return self.waits


@contextlib.asynccontextmanager
async def running(
    server: FastMCP,
    options: ExtensionOptions,
    live: Live,
    *,
    client: Client | None,
    plugins: Sequence[WorkerPlugin],
) -> AsyncIterator[None]:
    """While inside, ``live`` holds the engine (and the embedded server, if any).

    Its parts enter one exit stack in the order the module docstring gives, so they
    leave it in reverse: the worker drains before the front end stops waiting, and
    both before the engine and the client go away.
    """
    async with contextlib.AsyncExitStack() as stack:
        payloads, storage, client, plugins = await _open_client(
            stack, options, live, given=client, plugins=plugins
        )
        versioning = options.worker_versioning()
        task_queue = options.queue(server.name, embedded=live.dev_server is not None)
        engine = await _start_engine(
            stack,
            server,
            options,
            live,
            client,
            payloads,
            task_queue=task_queue,
            eager_start=options.run_worker and versioning is None,
        )
        # A worker here tells the calls waiting here what its legs do.
        leg_news = LegNews() if options.run_worker and not options.worker_only else None
        await _serve_front_end(stack, server, options, live, client, leg_news)
        if options.run_worker:
            await _run_worker(
                stack,
                server,
                options,
                live,
                client,
                payloads,
                storage,
                task_queue=task_queue,
                versioning=versioning,
                plugins=plugins,
                leg_news=leg_news,
            )
        startup_line.announce(
            startup_line.startup_line(
                client,
                live.dev_server,
                task_queue=task_queue,
                run_worker=options.run_worker,
                worker_only=options.worker_only,
                credentials=engine.starter.credentials,
            )
        )
        try:
            yield
        finally:
            live.engine = live.waits = None


async def _open_client(
    stack: contextlib.AsyncExitStack,
    options: ExtensionOptions,
    live: Live,
    *,
    given: Client | None,
    plugins: Sequence[WorkerPlugin],
) -> tuple[PayloadStoreSettings, ExternalStorage, Client, Sequence[WorkerPlugin]]:
    """The payload store, and a Temporal client that stores large payloads in it.

    First, because everything after talks to Temporal through this client: the one
    given (its twin, storing in the payload store), else a connection of our own
    (or the embedded server's). Returns the worker plugins a worker of ours needs.
    """
    payloads = PayloadStoreSettings.resolve(
        options.payload_store,
        data_dir=options.data_dir,
        threshold=options.payload_threshold,
        max_payload_bytes=options.max_payload_bytes,
    )
    storage = await payloads.open(stack)
    if given is not None:
        client = with_payload_storage(given, storage)
    else:
        client = await _connect(stack, options, live, storage)
        live.own_connection = weakref.ref(client.service_client)
        if live.dev_server is None:
            payloads.announce_local_default()
    # An agent framework's plugin that needs its own payload converter (the
    # OpenAI Agents SDK's) gets it for its payloads, under ours.
    client = with_plugin_payloads(client, plugins)
    if given is not None and client is not given:
        # The twins above are built without the given client's plugins (applied
        # already: they are in its config); a worker inherits its client's, so ours
        # gets them passed.
        plugins = [*_worker_plugins_of(given), *plugins]
    return payloads, storage, client, plugins


async def _start_engine(
    stack: contextlib.AsyncExitStack,
    server: FastMCP,
    options: ExtensionOptions,
    live: Live,
    client: Client,
    payloads: PayloadStoreSettings,
    *,
    task_queue: str,
    eager_start: bool,
) -> TaskEngine:
    """The task engine in ``live``, with its fairness and credentials, and its metrics.

    Built before the MCP side, which hands every request to it, and the worker,
    which seals callers' credentials with the same policy.
    """
    live.engine = engine = TaskEngine(
        client,
        task_queue=task_queue,
        ttl_ms=options.ttl_ms,
        query_timeout=timedelta(seconds=options.query_timeout),
        leg_policy=options.leg_policy,
        max_rounds=options.max_rounds,
        rounds_per_run=options.rounds_per_run,
        undeclared_input=options.undeclared_input,
        # An eager start hands the new task to this process's worker and
        # pins it to this build even when another version is current
        # (measured on Server 1.32): a versioned fleet lets Temporal route.
        eager_start=eager_start,
        tools=options.tools,
        scope_secret=scope.resolve_secret(
            options.scope_key(),
            embedded_data_dir=Path(live.dev_server.data_dir) if live.dev_server else None,
            warn=not options.worker_only and server.auth is not None,
        ),
        max_payload_bytes=payloads.max_payload_bytes,
        max_open_tasks_per_caller=options.max_open_tasks_per_caller,
        on_host_timeout=options.on_host_timeout,
    )
    engine.starter.fairness = Fairness.resolve(options.fairness, scope_secret=engine.scope_secret)
    engine.starter.credentials = resolve_policy(
        client,
        # An embedded server of this process seals under its own data directory's
        # key; by address, under the directory of an embedded server run elsewhere.
        embedded_data_dir=(
            Path(live.dev_server.data_dir) if live.dev_server else options.credentials_key_dir
        ),
        authenticated=server.auth is not None,
    )
    await stack.enter_async_context(
        metrics.recording(client, task_queue, count_open_tasks=not options.worker_only)
    )
    if engine.starter.fairness is not None and not options.worker_only:
        # Fairness holds per partition: say so if Temporal spreads the queues.
        leg_queues = {tool.task_queue for tool in options.tools.values()}
        leg_queues.add(options.leg_policy.task_queue)
        queues = {task_queue, *(queue for queue in leg_queues if queue)}
        await stack.enter_async_context(partition_watch(client, queues))
    return engine


async def _serve_front_end(
    stack: contextlib.AsyncExitStack,
    server: FastMCP,
    options: ExtensionOptions,
    live: Live,
    client: Client,
    leg_news: LegNews | None,
) -> None:
    """The MCP side: listen, SIGTERM, and (unless worker-only) waits, drain and sessions.

    After the engine, which it serves; before the worker, so on the way out the
    worker's legs finish while the calls waiting for them still wait. The drain is
    armed once the waiting calls run; the sealed sessions are served and their
    logouts shared last, so they close first.
    """
    engine = live.running_engine()
    # Task status pushed on subscriptions/listen (see ``listen``).
    _compat.serve_listen(server, TaskListenHandler(live.running_engine))
    # SIGTERM unwinds this lifespan and exits 0; an HTTP server drains its waits first.
    stack.enter_context(exits_cleanly())
    if options.worker_only:
        return
    drain = SigtermDrain(options.drain_grace_s)
    live.waits = waits = WaitingCalls(
        engine,
        leg_news,
        keepalive_s=options.keepalive_s,
        reads_per_second=options.wait_reads_per_second,
        stuck_call_timeout_s=options.stuck_call_timeout_s,
        on_wait=lambda: drain.arm(waits),
        calls=live.seam.calls,
        host_limits=options.host_limits,
    )
    await stack.enter_async_context(waits.running())
    # The reason of each client's cancel, for the plain call it cancels (``peer_cancels``).
    server.add_middleware(waits.cancel_reasons)
    stack.callback(server.middleware.remove, waits.cancel_reasons)
    # Under ``uvicorn app:app`` its handler is in place already: take it now, so
    # every SIGTERM goes through the drain (and exits 0), calls waiting or not.
    drain.arm(waits)
    # 2025-xx sessions any front end of the deployment serves (``portable_sessions``),
    # logged out on all of them by a DELETE on one (``session_logouts``).
    seal = SessionSeal.for_deployment(engine.scope_secret, options.session_max_age_s)
    stack.enter_context(live.seam.serving(seal, engine))
    await stack.enter_async_context(seal.sharing_logouts(client))


async def _run_worker(
    stack: contextlib.AsyncExitStack,
    server: FastMCP,
    options: ExtensionOptions,
    live: Live,
    client: Client,
    payloads: PayloadStoreSettings,
    storage: ExternalStorage,
    *,
    task_queue: str,
    versioning: WorkerVersioning | None,
    plugins: Sequence[WorkerPlugin],
    leg_news: LegNews | None,
) -> None:
    """This process's worker, the payload sweeper, and the previous queue's worker.

    Last, so it stops first: its legs finish (or are handed back) while the client,
    the engine and the calls waiting for them are still there.
    """
    workers = await InProcessWorkers.for_server(
        server,
        client,
        versioning=versioning,
        max_payload_bytes=payloads.max_payload_bytes,
        remote_servers=options.remote_servers,
        plugins=plugins,
        worker_options=options.worker_options,
        credentials=live.running_engine().starter.credentials,
        leg_news=leg_news,
    )
    await stack.enter_async_context(workers.new(task_queue))
    await stack.enter_async_context(sweeping(payloads, storage, client))
    if live.dev_server is not None and options.task_queue is None:
        await stack.enter_async_context(
            workers.serving_previous_queue(task_queue, Path(live.dev_server.data_dir))
        )


async def _connect(
    stack: contextlib.AsyncExitStack,
    options: ExtensionOptions,
    live: Live,
    storage: ExternalStorage,
) -> Client:
    """The configured Temporal, else the data directory's shared embedded one.

    A worker process (``serve_as_worker``) joins a running embedded server
    but never starts one: it would die with the worker.
    """
    client, live.dev_server = await connection.connect_or_join(
        stack,
        connection.resolve(**options.connection),
        data_dir=options.data_dir,
        start=not options.worker_only,
        ui=options.ui,
        data_converter=task_data_converter(
            revealed(options.encryption_key), payload_storage=storage
        ),
        plugins=telemetry.plugins() if options.tracing else (),
        runtime=options.metrics.runtime() if options.metrics else None,
    )
    if live.dev_server is not None:
        stack.callback(setattr, live, "dev_server", None)
    return client


def _worker_plugins_of(client: Client) -> list[WorkerPlugin]:
    """The plugins ``client`` was built with that configure workers too."""
    return [plugin for plugin in client.config()["plugins"] if isinstance(plugin, WorkerPlugin)]
