"""``fastmcp-temporal worker server.py[:mcp]``: a process that runs task legs, nothing else.

    fastmcp-temporal worker app/server.py                  # the `mcp` (or `server`, `app`) object
    fastmcp-temporal worker app/server.py:build            # or a factory, as `fastmcp run` takes
    fastmcp-temporal worker app/server.py --task-queue gpu # only the legs routed to `gpu`
    fastmcp-temporal worker app/server.py --deployment-name mcp --build-id "$GIT_SHA"

It imports the server exactly as ``fastmcp run`` does (``FileSystemSource``),
finds its ``TemporalTasks`` extension, turns it into a worker (whatever its
``run_worker`` says), and enters the server's lifespan: the user's own lifespan
(database pools, clients the tools use), the extension's connection, and a
Temporal worker serving the server's task tools. It serves no MCP traffic.

Start as many as you like on one task queue: Temporal hands each leg to one of
them. The Temporal address comes from the environment or ``temporal.toml`` like
any Temporal app (see ``connection``); without one it joins the embedded
Temporal of the server's data directory (``--data-dir``), but never starts one.

SIGTERM (or SIGINT) drains it gracefully: it stops polling, gives running legs
``--graceful-timeout`` seconds to finish, then cancels the rest, which hand
themselves back so that another worker runs them at once (a leg is retried on
infrastructure failures until its task's TTL, however many drains it sees).
Then it exits 0.

With a deployment name and build id (the flags, or ``TEMPORAL_DEPLOYMENT_NAME``
and ``TEMPORAL_WORKER_BUILD_ID`` as the Temporal Worker Controller sets them) it
is a versioned worker: see ``versioning`` for what that changes.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import Any

from fastmcp import FastMCP
from fastmcp.utilities.mcp_server_config.v1.sources.filesystem import FileSystemSource

from fastmcp_temporal.server.extension import TemporalTasks
from fastmcp_temporal.server.extension.temporal_tasks import registered_on
from fastmcp_temporal.server.payloads import payload_store
from fastmcp_temporal.server.temporal import connection
from fastmcp_temporal.server.temporal.connection import exit_now
from fastmcp_temporal.server.temporal.versioning import BEHAVIORS, WorkerVersioning

logger = logging.getLogger(__name__)

#: Printed once the worker polls: process supervisors and tests wait for it.
READY_LINE = "fastmcp-temporal worker ready"
DEFAULT_GRACEFUL_TIMEOUT_S = 30.0


def server_lifespan(server: FastMCP) -> AbstractAsyncContextManager[None]:
    """Enter ``server``'s lifespan (its own and its extensions') without serving MCP:
    that of the HTTP app FastMCP builds for it, as an app that mounts it enters it
    (``lifespan=mcp.http_app().lifespan``); the app itself is never served."""
    app = server.http_app()
    return app.lifespan(app)


async def load(spec: str) -> tuple[FastMCP, TemporalTasks]:
    """The server at ``spec`` (``fastmcp run`` rules) and its ``TemporalTasks``."""
    server = await FileSystemSource(path=spec).load_server()
    if not isinstance(server, FastMCP):
        raise SystemExit(f"worker: {spec} is not a FastMCP server")
    extension = registered_on(server)
    if extension is None:
        raise SystemExit(
            f"worker: {spec} has no TemporalTasks extension: "
            "add mcp.add_extension(TemporalTasks(...)) to the server"
        )
    return server, extension


async def serve(
    spec: str,
    *,
    task_queue: str | None = None,
    graceful_timeout_s: float = DEFAULT_GRACEFUL_TIMEOUT_S,
    max_concurrent_legs: int | None = None,
    connection_overrides: dict[str, Any] | None = None,
    versioning: WorkerVersioning | None = None,
    payload_store: str | None = None,
    data_dir: str | None = None,
) -> None:
    """Run the worker until SIGTERM/SIGINT, then drain and return."""
    server, extension = await load(spec)
    options: dict[str, Any] = {"graceful_shutdown_timeout": timedelta(seconds=graceful_timeout_s)}
    if max_concurrent_legs is not None:
        options["max_concurrent_activities"] = max_concurrent_legs
    extension.serve_as_worker(
        task_queue=task_queue,
        versioning=versioning,
        connection=connection_overrides,
        payload_store=payload_store,
        data_dir=data_dir,
        **options,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with server_lifespan(server):
        version = extension._worker_versioning()
        logger.warning(
            "fastmcp-temporal worker: server %r, task queue %r, %s",
            server.name,
            extension.task_queue,
            f"version {version.describe()}" if version else "unversioned",
        )
        print(READY_LINE, flush=True)
        await stop.wait()
        logger.warning("fastmcp-temporal worker: draining (up to %ss)", graceful_timeout_s)
    del server, extension
    gc.collect()  # drop the Temporal client before exit (temporalio/sdk-python#300)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``worker`` to the ``fastmcp-temporal`` command."""
    parser = commands.add_parser(
        "worker", help="run the task legs of a FastMCP server (no MCP traffic)"
    )
    parser.add_argument("server", help="path/to/server.py[:object], as for `fastmcp run`")
    parser.add_argument("--task-queue", help="poll this queue instead of the extension's")
    parser.add_argument(
        "--graceful-timeout",
        type=float,
        default=DEFAULT_GRACEFUL_TIMEOUT_S,
        help="seconds running legs get to finish on SIGTERM before they are handed back",
    )
    parser.add_argument("--max-concurrent-legs", type=int, help="legs one worker runs at once")
    versions = parser.add_argument_group(
        "Worker versioning", "a Worker Deployment Version; default: unversioned"
    )
    versions.add_argument("--deployment-name", help="Worker Deployment (TEMPORAL_DEPLOYMENT_NAME)")
    versions.add_argument("--build-id", help="this build's id (TEMPORAL_WORKER_BUILD_ID)")
    versions.add_argument(
        "--versioning-behavior",
        choices=sorted(BEHAVIORS),
        default="pinned",
        help="task workflows stay on their build (pinned) or move to the current one",
    )
    connection.add_arguments(parser)
    payload_store.add_argument(parser)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("fastmcp_temporal").setLevel(logging.INFO)  # its start-up lines are INFO
    try:
        versioning = WorkerVersioning.resolve(
            deployment_name=args.deployment_name,
            build_id=args.build_id,
            default_behavior=BEHAVIORS[args.versioning_behavior],
        )
    except ValueError as err:
        raise SystemExit(f"worker: {err}") from None
    asyncio.run(
        serve(
            args.server,
            task_queue=args.task_queue,
            graceful_timeout_s=args.graceful_timeout,
            max_concurrent_legs=args.max_concurrent_legs,
            connection_overrides=connection.overrides_from(args),
            versioning=versioning,
            payload_store=args.payload_store,
            data_dir=args.data_dir,
        )
    )
    return exit_now(0)
