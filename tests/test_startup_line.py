"""A plain server says where its tasks go, with no logging set up, once.

Every FastMCP quick start is ``mcp.run(...)`` and nothing else; the server must
still say where its Temporal is (embedded: address, Web UI, data directory; or
the configured address and namespace), its task queue, whether payloads are
encrypted and whether it runs a worker. Each test starts a real server process
(``tests.processes.embedded_server``, which configures no logging) and reads
its output. ``COLUMNS`` is wide so that the rich handler FastMCP logs through
keeps the line on one line; in a terminal it wraps like FastMCP's own lines.
"""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path

from fastmcp_temporal.testing import EmbeddedServer
from tests.ports import free_port
from tests.processes.running import Process
from tests.wire import RawMcp

WIDE = {"COLUMNS": "1000"}


def start(
    name: str, data_dir: Path, log: Path, env: dict[str, str], *extra: str
) -> tuple[Process, int]:
    port = free_port()
    args = ["--name", name, "--port", str(port), "--data-dir", str(data_dir), *extra]
    module = [sys.executable, "-m", "tests.processes.embedded_server"]
    return Process(name, [*module, *args], {**WIDE, **env}, log), port


def startup_lines(process: Process) -> list[str]:
    return [line for line in process.output().splitlines() if "; task queue " in line]


async def serve_one_request(process: Process, port: int) -> None:
    """The server answers: it is up, and nothing it does later repeats the line."""
    await process.wait_for_port(port, timeout=90)
    listed = await RawMcp(f"http://127.0.0.1:{port}/mcp").result("tools/list")
    assert [tool["name"] for tool in listed["tools"]] == ["nap"]


async def test_an_embedded_server_logs_its_temporal_ui_and_queue(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    embedded = {"TEMPORAL_ADDRESS": ""}
    process, port = start("startup", data_dir, tmp_path / "server.log", embedded, "--ui")
    try:
        await serve_one_request(process, port)
    finally:
        process.stop()
    (line,) = startup_lines(process)
    assert " INFO " in line, line
    assert "fastmcp-temporal: embedded Temporal at 127.0.0.1:" in line, line
    assert ", Web UI http://127.0.0.1:" in line, line
    assert f"(data {data_dir})" in line, line
    assert "namespace 'default'; task queue 'mcp-tasks-startup'" in line, line
    assert "payloads not encrypted (callers' credentials sealed), worker in this process" in line, (
        line
    )
    assert "try: TEMPORAL_ADDRESS=127.0.0.1:" in line and " workflow list" in line, line


async def test_a_front_end_on_a_configured_temporal_logs_its_address(
    temporal_server: EmbeddedServer, tmp_path: Path
) -> None:
    key = base64.b64encode(os.urandom(32)).decode()
    env = {
        "TEMPORAL_ADDRESS": temporal_server.address,
        "FASTMCP_TEMPORAL_ENCRYPTION_KEY": key,
        "FASTMCP_TEMPORAL_RUN_WORKER": "false",
    }
    process, port = start("front", tmp_path / "data", tmp_path / "server.log", env)
    try:
        await serve_one_request(process, port)
    finally:
        process.stop()
    (line,) = startup_lines(process)
    assert f"fastmcp-temporal: Temporal at {temporal_server.address}, namespace 'default';" in (
        line
    ), line
    assert "task queue 'mcp-tasks', payloads encrypted, no worker in this process" in line, line
    assert "embedded" not in line and "Web UI" not in line, line
