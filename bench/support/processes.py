"""The server processes a benchmark starts: each in its own group, stopped by it.

A front end and a worker run as separate processes (``fastmcp run`` / ``fastmcp-temporal
worker``, or a script of ``bench/support/``), each the leader of its own process group,
so stopping it stops whatever it started; a benchmark that stops early leaves none.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Group:
    """Processes started in order, stopped in reverse (SIGTERM, then SIGKILL after ``grace_s``)."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, command: list[str], env: dict[str, str] | None = None) -> int:
        """Start ``command`` from the repository root, its stderr in ``<logs>/<name>.log``."""
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**self.env, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=open(self.logs / f"{name}.log", "wb"),  # noqa: SIM115
            start_new_session=True,
        )
        self.started.append(process)
        return process.pid

    def stop(self, grace_s: float) -> None:
        for process in reversed(self.started):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@contextlib.contextmanager
def group(env: dict[str, str], logs: Path, grace_s: float = 30) -> Iterator[Group]:
    started = Group(env, logs)
    try:
        yield started
    finally:
        started.stop(grace_s)


def wait_for_port(port: int, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on {port} after {timeout_s} s")
