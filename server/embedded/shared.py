"""One embedded Temporal per data directory, shared by every process that uses it.

``TemporalTasks()`` with no address, ``fastmcp-temporal worker`` and
``fastmcp-temporal tasks`` all *join* the embedded server of their data directory
(``.fastmcp-temporal`` by default); only the extension may *start* it. Two MCP
servers started from one folder therefore share one ``temporal server
start-dev`` on one SQLite file, instead of fighting over its shards.

How it is shared, with nothing but files in the data directory:

- ``embedded.lock``: held exclusively while a process joins (or the keeper
  decides to stop), so joining and stopping never interleave;
- ``embedded.users``: every user holds a *shared* ``flock`` on it for as long as
  it uses the server. The kernel drops it when the process dies, ``kill -9``
  included, so a crashed user never keeps the server alive;
- ``embedded.keeper``: held exclusively by the keeper for its whole life, so a
  joiner can tell a live keeper from a stale record (no PID reuse guesswork);
- ``embedded.json``: the address record (gRPC address, Web UI URL, PIDs),
  written by the keeper once the server answers.

The first joiner starts the *keeper* (``fastmcp_temporal.server.embedded.keeper``), a
small process in its own session that owns the ``temporal`` process (which the
kernel SIGTERMs if the keeper dies) and stops it when it can take the users
file exclusively, i.e. when the last user is gone, after a short linger so a
restart or the next test's lifespan reuses it (``FASTMCP_TEMPORAL_EMBEDDED_LINGER``
seconds, default 3). Killing the process that started it changes nothing for
the others: the keeper is not its child in any way that matters. Killing the
keeper takes Temporal with it; the extension's processes restart both on the
same ports (``EmbeddedLease.keep_alive``).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from fastmcp_temporal.server.core.settings import env_var, load_settings
from fastmcp_temporal.server.embedded import keeper as keeper_script
from fastmcp_temporal.server.embedded.devserver import (
    free_port,
    start_dev_command,
    temporal_binary,
)
from fastmcp_temporal.server.embedded.keeper import KEEPER_LOCK, RECORD, TEMPORAL_LOG, USERS_LOCK

logger = logging.getLogger(__name__)

LINGER_ENV = env_var("embedded_linger")
KEEPER_LOG = "embedded-keeper.log"
CONVENTIONAL_GRPC_PORT = 7233
CONVENTIONAL_UI_PORT = 8233
_POLL_S = 0.02


class NoEmbeddedServer(RuntimeError):
    """Nothing to join: no address configured and no embedded server running here."""


@dataclass(frozen=True)
class EmbeddedServer:
    """The address record of a running embedded Temporal (``embedded.json``)."""

    address: str
    ui_url: str | None
    namespace: str
    data_dir: str
    temporal_pid: int
    keeper_pid: int

    @classmethod
    def read(cls, directory: Path) -> EmbeddedServer | None:
        try:
            return cls(**json.loads((directory / RECORD).read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def where(self) -> str:
        """For the start-up line: its address, its Web UI, its data directory."""
        ui = f"Web UI {self.ui_url}" if self.ui_url else "no Web UI"
        data = _shown_path(Path(self.data_dir))
        return f"embedded Temporal at {self.address}, {ui} (data {data})"

    def try_command(self) -> str:
        """For the start-up line: how to look at its tasks by hand."""
        binary = _shown_path(Path(temporal_binary()))
        return f"TEMPORAL_ADDRESS={self.address} {binary} workflow list"


@dataclass
class EmbeddedLease:
    """One user's share of the embedded server: the server lives while a lease does."""

    server: EmbeddedServer
    _users: IO[bytes] | None

    def release(self) -> None:
        """Drop the share (idempotent); the keeper stops the server after the last one."""
        users, self._users = self._users, None
        if users is not None:
            users.close()  # closing the last descriptor releases the flock

    async def keep_alive(self, *, ui: bool, namespace: str, interval_s: float = 0.5) -> None:
        """While held: if the keeper dies (``kill -9``), restart the server at its address.

        Temporal dies with its keeper, so without this every user would lose it.
        The first user to notice takes the join lock and starts a new keeper on
        the same ports (once the old ``temporal`` has let go of them); the
        others find its record. Clients reconnect to the same address by
        themselves, and the SQLite file brings every task back.
        """
        directory = Path(self.server.data_dir)
        while self._users is not None:
            await asyncio.sleep(interval_s)
            if keeper_alive(directory):
                continue
            try:
                server = await self._restart(directory, ui, namespace)
            except Exception:
                logger.exception("fastmcp-temporal: could not restart the embedded Temporal")
                continue
            if server.address != self.server.address:
                logger.error(
                    "fastmcp-temporal: the embedded Temporal moved to %s (its port was taken); "
                    "restart this process to follow it",
                    server.address,
                )
            self.server = server

    async def _restart(self, directory: Path, ui: bool, namespace: str) -> EmbeddedServer:
        """Under the join lock: the record another user's restart wrote, or a new keeper."""
        with open(directory / keeper_script.JOIN_LOCK, "ab") as join_lock:
            await _flock(join_lock, fcntl.LOCK_EX)
            server = running(directory)
            if server is not None:
                return server
            await _until_gone(self.server.temporal_pid)
            ports = (_port_of(self.server.address), _port_of(self.server.ui_url))
            server = await _start_keeper(directory, ui, namespace, 60.0, ports=ports)
        logger.warning(
            "fastmcp-temporal: the embedded Temporal's keeper died; restarted at %s", server.address
        )
        return server


def data_directory(data_dir: str | Path | None) -> Path:
    return Path(data_dir or load_settings().data_dir).resolve()


async def join(
    data_dir: str | Path | None = None,
    *,
    start: bool = True,
    ui: bool = True,
    namespace: str = "default",
    startup_timeout_s: float = 60.0,
) -> EmbeddedLease:
    """Become a user of the data directory's embedded server, starting it if allowed.

    With ``start=False`` (workers, the ``tasks`` command) a missing server is a
    ``NoEmbeddedServer`` error: those processes must join one, never own one.
    """
    directory = data_directory(data_dir)
    if not start and not (directory / RECORD).exists():
        raise NoEmbeddedServer(_nothing_running(directory))
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / keeper_script.JOIN_LOCK, "ab") as join_lock:
        await _flock(join_lock, fcntl.LOCK_EX)
        users = open(directory / USERS_LOCK, "ab")  # noqa: SIM115  (held by the lease)
        try:
            await _flock(users, fcntl.LOCK_SH)
            server = running(directory)
            if server is None:
                if not start:
                    raise NoEmbeddedServer(_nothing_running(directory))
                server = await _start_keeper(directory, ui, namespace, startup_timeout_s)
        except BaseException:
            users.close()
            raise
        # join_lock is released when the file closes, after our shared lock is held.
    return EmbeddedLease(server, users)


def running(directory: Path) -> EmbeddedServer | None:
    """The live record, or ``None`` (a record whose keeper is gone is removed)."""
    server = EmbeddedServer.read(directory)
    if server is None:
        return None
    if not keeper_alive(directory):
        with contextlib.suppress(FileNotFoundError):
            (directory / RECORD).unlink()
        return None
    return server


def keeper_alive(directory: Path) -> bool:
    """Whether a keeper holds ``embedded.keeper`` (a dead one holds nothing)."""
    try:
        probe = open(directory / KEEPER_LOCK, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return False
    with probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe, fcntl.LOCK_UN)
        return False


def linger_s() -> float:
    """How long the keeper keeps an unused server (``FASTMCP_TEMPORAL_EMBEDDED_LINGER``)."""
    return load_settings().embedded_linger


async def _flock(file: IO[bytes], operation: int) -> None:
    """``flock`` without blocking the event loop (a joiner may wait seconds for a start)."""
    while True:
        try:
            fcntl.flock(file, operation | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            await asyncio.sleep(_POLL_S)


async def _start_keeper(
    directory: Path,
    ui: bool,
    namespace: str,
    timeout_s: float,
    *,
    ports: tuple[int | None, int | None] = (CONVENTIONAL_GRPC_PORT, CONVENTIONAL_UI_PORT),
) -> EmbeddedServer:
    """Start the keeper and wait for its record (we hold the join lock meanwhile).

    The wanted ports first (7233 gRPC, 8233 UI; a restart's previous ones) when
    they look free; if another process takes one meanwhile, Temporal fails to
    bind and we start again on free ports.
    """
    wanted_grpc = ports[0] or CONVENTIONAL_GRPC_PORT
    wanted_ui = ports[1] or CONVENTIONAL_UI_PORT
    grpc_port = _preferred(wanted_grpc)
    ui_port = _preferred(wanted_ui) if ui else None
    try:
        return await _run_keeper(directory, namespace, grpc_port, ui_port, timeout_s)
    except _TemporalFailed:
        if grpc_port != wanted_grpc and ui_port != wanted_ui:
            logger.info("a free port was taken before Temporal bound it; choosing again")
        else:
            logger.info("conventional Temporal ports taken meanwhile; using free ports")
    # Free ports, chosen by binding 0, can be taken by another process before
    # Temporal binds them too: one more choice, and then the failure is reported.
    ui_port = free_port() if ui else None
    return await _run_keeper(directory, namespace, free_port(), ui_port, timeout_s)


class _TemporalFailed(RuntimeError):
    """The keeper ran but Temporal did not come up (a port race, a broken database)."""


async def _run_keeper(
    directory: Path, namespace: str, grpc_port: int, ui_port: int | None, timeout_s: float
) -> EmbeddedServer:
    http_port = free_port()
    command = start_dev_command(
        directory, port=grpc_port, ui_port=ui_port, namespace=namespace, http_port=http_port
    )
    args = [sys.executable, "-P", keeper_script.__file__, str(directory)]
    args += ["--namespace", namespace, "--address", f"127.0.0.1:{grpc_port}"]
    args += ["--http-url", f"http://127.0.0.1:{http_port}", "--linger", str(linger_s())]
    args += ["--ui-url", f"http://127.0.0.1:{ui_port}"] if ui_port else []
    with open(directory / KEEPER_LOG, "ab") as log:
        keeper = subprocess.Popen(
            [*args, "--", *command],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        server = EmbeddedServer.read(directory)
        if server is not None and server.keeper_pid == keeper.pid:
            return server
        if keeper.poll() is not None:
            failure = (
                _TemporalFailed
                if keeper.returncode == keeper_script.TEMPORAL_FAILED
                else RuntimeError
            )
            raise failure(
                f"The embedded Temporal did not start (keeper exit {keeper.returncode}); "
                f"see {directory / KEEPER_LOG} and {directory / TEMPORAL_LOG}"
            )
        await asyncio.sleep(_POLL_S)
    keeper.terminate()
    raise TimeoutError(f"The embedded Temporal did not answer in {timeout_s}s; see {directory}")


def _port_of(address: str | None) -> int | None:
    """``127.0.0.1:7233`` or ``http://127.0.0.1:8233`` -> the port."""
    if address is None:
        return None
    return int(address.rsplit(":", 1)[1])


async def _until_gone(pid: int, timeout_s: float = 15.0) -> None:
    """Wait for a process we do not own to exit (a zombie counts as gone: it holds no port)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state == "Z":
            return
        await asyncio.sleep(0.1)


def _preferred(port: int) -> int:
    """``port`` if nothing listens on it (nor holds it bound), else a free one.

    Probed with ``SO_REUSEADDR`` as Temporal (Go) binds: connections of a server
    that just stopped linger in TIME_WAIT and must not push a restart elsewhere.
    """
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return free_port()
    return port


def _nothing_running(directory: Path) -> str:
    return (
        f"No Temporal address and no embedded Temporal running in {_shown_path(directory)}: "
        "set TEMPORAL_ADDRESS (or a temporal.toml profile), pass --address, "
        "or start the MCP server (it starts the embedded one) from this folder"
    )


def _shown_path(path: Path) -> str:
    """Relative to the working directory when inside it: shorter to copy."""
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(Path.cwd()))
    return str(path)
