"""The keeper: owns a data directory's embedded Temporal while anyone uses it.

    python -m fastmcp_temporal.server.keeper <data dir> [--namespace NS] [--headless] [--linger S]

Started by the first process that joins (see ``embedded``), in its own session
so the terminal's Ctrl-C and the death of that process do not reach it. It

1. takes ``embedded.keeper`` exclusively (its proof of life) -- a second keeper
   for the same directory exits at once;
2. starts ``temporal server start-dev`` on the conventional ports (7233 gRPC,
   8233 UI) when they are free, on free ports otherwise; the ``temporal``
   process gets SIGTERM from the kernel if the keeper dies, even by ``kill -9``;
3. writes ``embedded.json`` once the server and its UI answer;
4. polls, every 0.2 s, whether it can take ``embedded.users`` exclusively and
   ``embedded.lock`` too (nobody uses the server and nobody is joining); when
   that still holds after the linger, it removes the record, stops Temporal and
   exits. It also exits if Temporal dies, or on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import logging
import os
import signal
import socket
from pathlib import Path
from typing import IO

from fastmcp_temporal.server.devserver import DevServer, free_port
from fastmcp_temporal.server.embedded import (
    JOIN_LOCK,
    KEEPER_LOCK,
    RECORD,
    USERS_LOCK,
    EmbeddedServer,
)

logger = logging.getLogger("fastmcp_temporal.keeper")

CONVENTIONAL_GRPC_PORT = 7233
CONVENTIONAL_UI_PORT = 8233
_IDLE_POLL_S = 0.2


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def preferred(port: int) -> int:
    return port if port_free(port) else free_port()


async def start_temporal(directory: Path, namespace: str, ui: bool) -> DevServer:
    """On the conventional ports when free; on free ports if that start fails (a race)."""
    port, ui_port = preferred(CONVENTIONAL_GRPC_PORT), preferred(CONVENTIONAL_UI_PORT)
    try:
        return await DevServer.start(
            data_dir=directory, ui=ui, namespace=namespace, port=port, ui_port=ui_port
        )
    except RuntimeError:
        if (port, ui_port) == (CONVENTIONAL_GRPC_PORT, CONVENTIONAL_UI_PORT):
            logger.warning("conventional ports taken meanwhile; starting on free ports")
            return await DevServer.start(data_dir=directory, ui=ui, namespace=namespace)
        raise


def _try_lock(file: IO[bytes]) -> bool:
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class Keeper:
    """The idle check: nobody holds a share and nobody is joining."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._users = open(directory / USERS_LOCK, "ab")  # noqa: SIM115
        self._join = open(directory / JOIN_LOCK, "ab")  # noqa: SIM115

    def idle(self) -> bool:
        """Both locks taken at once means idle; they are kept until ``release``."""
        if not _try_lock(self._users):
            return False
        if _try_lock(self._join):
            return True
        fcntl.flock(self._users, fcntl.LOCK_UN)
        return False

    def release(self) -> None:
        fcntl.flock(self._join, fcntl.LOCK_UN)
        fcntl.flock(self._users, fcntl.LOCK_UN)

    async def wait_until_unused(self, linger_s: float, temporal: DevServer) -> None:
        """Return holding both locks once idle for ``linger_s``, or when Temporal died."""
        while True:
            await asyncio.sleep(_IDLE_POLL_S)
            if temporal.process.poll() is not None:
                logger.error("temporal exited with %s", temporal.process.returncode)
                return
            if not self.idle():
                continue
            if linger_s <= 0:
                return
            self.release()
            await asyncio.sleep(linger_s)
            if self.idle():
                return


async def keep(directory: Path, namespace: str, ui: bool, linger_s: float) -> int:
    proof = open(directory / KEEPER_LOCK, "ab")  # noqa: SIM115  (held until exit)
    if not _try_lock(proof):
        logger.error("another keeper owns %s", directory)
        return 3
    keeper = Keeper(directory)
    temporal = await start_temporal(directory, namespace, ui)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    EmbeddedServer(
        address=temporal.address,
        ui_url=temporal.ui_url,
        namespace=namespace,
        data_dir=str(directory),
        temporal_pid=temporal.process.pid,
        keeper_pid=os.getpid(),
    ).write(directory)
    unused = asyncio.ensure_future(keeper.wait_until_unused(linger_s, temporal))
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({unused, stopped}, return_when=asyncio.FIRST_COMPLETED)
    unused.cancel()
    stopped.cancel()
    with contextlib.suppress(FileNotFoundError):
        (directory / RECORD).unlink()
    temporal.stop()
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="fastmcp_temporal.server.keeper")
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--headless", action="store_true")
    parser.add_argument("--linger", type=float, default=0.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s keeper %(message)s")
    directory: Path = args.data_dir.resolve()
    raise SystemExit(asyncio.run(keep(directory, args.namespace, not args.headless, args.linger)))


if __name__ == "__main__":
    main()
