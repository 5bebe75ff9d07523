"""What the remote-call tests share: the remote server process, the orchestrator, history text."""

from __future__ import annotations

import base64
import binascii
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from fastmcp import Client, FastMCP
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import LegPolicy, TemporalTasks
from fastmcp_temporal.client import TasksClientExtension, TaskState, call_tool_task
from tests.ports import free_port
from tests.processes.remote_caller import connections, tools
from tests.processes.remote_workflows import PATIENT_HEARTBEAT_S
from tests.processes.running import Process

#: The remote requires it; only the worker's connection knows it.
TOKEN = "remote-secret-token-7f3a9c"


class RemotePeer:
    """The remote MCP server in its own process (``tests.processes.remote_peer``)."""

    def __init__(
        self,
        kind: str,
        log_dir: Path,
        address: str,
        task_queue: str,
        *,
        heartbeat_timeout_s: float = PATIENT_HEARTBEAT_S,
    ) -> None:
        self.kind, self.log_dir, self.address = kind, log_dir, address
        self.heartbeat_timeout_s = heartbeat_timeout_s
        self.task_queue = f"{task_queue}-remote"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: Process | None = None
        self.starts = 0

    async def start(self) -> None:
        """Start (or restart, on the same port) the remote; a first start whose port was
        taken meanwhile by another process on this shared machine picks another."""
        for _ in range(3):
            self.starts += 1
            args = [sys.executable, "-m", "tests.processes.remote_peer", "--kind", self.kind]
            args += ["--port", str(self.port), "--token", TOKEN]
            if self.kind == "ours":
                args += ["--address", self.address, "--task-queue", self.task_queue]
                args += ["--heartbeat-timeout", str(self.heartbeat_timeout_s)]
            log = self.log_dir / f"remote-{self.kind}-{self.starts}.log"
            self.process = Process(f"remote {self.kind}", args, {}, log)
            try:
                await self.process.wait_for_output("Uvicorn running on")
                return
            except AssertionError:
                if "address already in use" not in self.process.output() or self.starts > 1:
                    raise
                self.port = free_port()
                self.url = f"http://127.0.0.1:{self.port}/mcp"
                self.starts = 0
        raise AssertionError("no free port for the remote")

    def kill(self) -> None:
        if self.process is not None:
            self.process.signal(9)
            self.process.popen.wait()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    @asynccontextmanager
    async def direct_client(self) -> AsyncIterator[Client[Any]]:
        """A client of the remote itself (with the token), to check what it says."""
        async with Client(self.url, auth=TOKEN, extensions=[TasksClientExtension()]) as client:
            yield client


def orchestrator(tasks: TemporalTasks) -> FastMCP:
    mcp = FastMCP("orchestrator")
    mcp.add_extension(tasks)
    mcp.mount(tools())
    return mcp


def orchestrator_tasks(peer_url: str, **options: Any) -> dict[str, Any]:
    return {
        "remote_servers": connections(peer_url, TOKEN),
        "leg_policy": LegPolicy(heartbeat_timeout_s=PATIENT_HEARTBEAT_S),
        **options,
    }


async def run_tool(client: Client[Any], tool: str, arguments: dict[str, Any]) -> TaskState:
    task = await call_tool_task(client, tool, arguments)
    return await task.wait(timeout=90)


def report_of(state: TaskState) -> dict[str, Any]:
    assert state.status == "completed", state
    assert state.result is not None
    return state.result["structuredContent"]


async def history_text(temporal_client: TemporalClient, workflow_id: str) -> str:
    """The workflow's history as JSON, with every payload's data decoded too."""
    raw = (await temporal_client.get_workflow_handle(workflow_id).fetch_history()).to_json()
    decoded: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            data = node.get("data")
            if isinstance(data, str) and "metadata" in node:
                with suppress(binascii.Error, ValueError):
                    decoded.append(base64.b64decode(data).decode("utf-8", "replace"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(raw))
    return raw + "\n" + "\n".join(decoded)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []
