"""Real processes for tests: start them, wait until they are ready, stop them by PID.

Each process gets its own session (process group), so stopping it by its PID
stops whatever it started too; output goes to a log file the failure message
points at. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

from tests import forks
from tests.ports import free_port

ROOT = Path(__file__).resolve().parent.parent.parent
BIN = Path(sys.executable).parent


class Process:
    def __init__(
        self,
        name: str,
        args: Sequence[str],
        env: Mapping[str, str],
        log: Path,
        cwd: Path = ROOT,
    ) -> None:
        self.name = name
        self.log = log
        with open(log, "wb") as out:
            self.popen = forks.popen(
                list(args),
                cwd=cwd,
                env={**os.environ, **env},
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    async def wait_for_output(self, text: str, timeout: float = 60.0) -> None:
        await _until(lambda: text in self.output(), timeout, self)

    async def wait_for_port(self, port: int, timeout: float = 60.0) -> None:
        def listening() -> bool:
            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", port)) == 0

        await _until(listening, timeout, self)

    def signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signum)

    async def exit_code(self, timeout: float = 30.0) -> int:
        deadline = asyncio.get_running_loop().time() + timeout
        while self.popen.poll() is None:
            assert asyncio.get_running_loop().time() < deadline, f"{self.name} did not exit"
            await asyncio.sleep(0.05)
        return self.popen.returncode

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s: never leaves the process behind."""
        if self.popen.poll() is not None:
            return
        self.signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.popen.wait()


@contextlib.asynccontextmanager
async def serving_on_free_port(
    name: str, args: Sequence[str], env: Mapping[str, str], log: Path, timeout: float = 60.0
) -> AsyncIterator[str]:
    """Start ``args --port <free port>``; yield its MCP URL once it listens; stop it by PID."""
    port = free_port()
    process = Process(name, [*args, "--port", str(port)], env, log)
    try:
        await process.wait_for_port(port, timeout)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.stop()


async def _until(predicate, timeout: float, process: Process) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if process.popen.poll() is not None:
            raise AssertionError(f"{process.name} exited early:\n{process.output()[-3000:]}")
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(
                f"{process.name} not ready in {timeout}s:\n{process.output()[-3000:]}"
            )
        await asyncio.sleep(0.05)
