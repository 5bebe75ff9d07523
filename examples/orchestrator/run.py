"""Run the whole orchestrator example with one command, offline, on the embedded Temporal.

    python examples/orchestrator/run.py            # prints the triage report

Starts the support desk and the triage server as two processes (sharing one
embedded Temporal in a fresh data directory), runs the scripted client against
the triage server, then stops both servers by PID (the embedded Temporal stops
a few seconds after its last user). Exits non-zero if anything failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from examples.orchestrator.client import triage  # noqa: E402

#: Long enough for the first server to start the embedded Temporal.
STARTUP_TIMEOUT_S = 90.0


def free_port() -> int:
    """A port nothing listens on now (the OS picks it): one per server to start."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(module: str, *args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, env=env)


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{process.args} exited with {process.returncode}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"nothing listens on port {port} after {STARTUP_TIMEOUT_S}s")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", help="the embedded Temporal's directory (default: a new one)")
    parser.add_argument("--report", type=Path, help="also write the report (JSON) to this file")
    args = parser.parse_args()
    data_dir = args.data_dir or tempfile.mkdtemp(prefix="orchestrator-")
    env = {**os.environ, "FASTMCP_TEMPORAL_DATA_DIR": data_dir, "PYTHONPATH": str(ROOT)}
    desk_port, triage_port = free_port(), free_port()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        desk = start("examples.orchestrator.desk_server", "--port", str(desk_port), env=env)
        processes.append(desk)
        wait_for_port(desk_port, desk)
        orchestrator = start(
            "examples.orchestrator.triage_server",
            "--port",
            str(triage_port),
            "--desk-url",
            f"http://127.0.0.1:{desk_port}/mcp",
            env=env,
        )
        processes.append(orchestrator)
        wait_for_port(triage_port, orchestrator)
        report = asyncio.run(triage(f"http://127.0.0.1:{triage_port}/mcp"))
        print(json.dumps(report, indent=2))
        if args.report is not None:
            args.report.write_text(json.dumps(report))
        return 0
    finally:
        for process in reversed(processes):
            stop(process)


if __name__ == "__main__":
    sys.exit(main())
