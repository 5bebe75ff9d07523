"""What the multi-process tests share: a worker-less front end, worker processes, waiting."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowHandle

from fastmcp_temporal import LegPolicy, TemporalTasks
from tests import forks

ROOT = Path(__file__).resolve().parent.parent

#: Tests of the peer itself (``fastmcp-tasks``, FastMCP's tasks reference): it
#: exists only for FastMCP 4.1 (it pins ``fastmcp-slim==4.1.4``), so on 4.2 they skip.
needs_peer = pytest.mark.skipif(
    importlib.util.find_spec("fastmcp_tasks") is None,
    reason="fastmcp-tasks (the peer) is published only for FastMCP 4.1: not installable here",
)


def front_end(
    temporal_client: TemporalClient,
    task_queue: str,
    served: FastMCP,
    *,
    leg_queue: str | None = None,
    heartbeat_timeout_s: float = 2,
) -> FastMCP:
    """A stateless front end for ``served``'s tools: no worker, 2 s heartbeat timeout.

    The tools are mounted so the front end validates calls exactly as the workers
    that run them will; the short heartbeat timeout makes a killed worker's leg
    move to another worker within seconds. ``leg_queue``: the legs' own queue.
    ``heartbeat_timeout_s``: the legs' (the creating front end's policy is the
    one a task keeps, not its workers'); longer where no worker is killed.
    """
    mcp = FastMCP("front-end")
    mcp.add_extension(
        TemporalTasks(
            client=temporal_client,
            task_queue=task_queue,
            run_worker=False,
            leg_policy=LegPolicy(heartbeat_timeout_s=heartbeat_timeout_s, task_queue=leg_queue),
        )
    )
    mcp.mount(served)
    return mcp


def spawn(*module_args: str) -> forks.Child:
    """``python -m <module_args>`` from the repository root, in its own process group."""
    return forks.popen(
        [sys.executable, "-m", *module_args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def spawn_worker(address: str, task_queue: str, server_module: str) -> forks.Child:
    """A worker process for ``server_module``'s ``mcp`` (see ``tests.processes.worker``)."""
    return spawn("tests.processes.worker", address, task_queue, server_module)


def kill(process: forks.Child) -> None:
    """SIGKILL the process group (a crash, not a shutdown) and reap it."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


async def eventually(predicate: Callable[[], bool], timeout: float = 30) -> None:
    """Wait until ``predicate()`` holds; fail the test if it never does."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition never became true"
        await asyncio.sleep(0.05)


async def until_event(
    handle: WorkflowHandle, event_type: EventType, count: int = 1, timeout: float = 60
) -> list[EventType]:
    """Wait until the workflow's history holds ``count`` events of ``event_type``;
    return the history's event types, in order."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        events = [event.event_type for event in (await handle.fetch_history()).events]
        if events.count(event_type) >= count:
            return events
        assert asyncio.get_running_loop().time() < deadline, f"{events.count(event_type)} events"
        await asyncio.sleep(0.1)


async def declares_elicitation(message: str, response_type: Any, params: Any, context: Any) -> Any:
    """An ``elicitation_handler`` that only makes a ``Client`` declare ``elicitation``.

    A task asking a client for input it did not declare fails at once, so tests
    that park tasks must use a client that can answer; they answer through
    ``tasks/update`` themselves, so this handler is never called.
    """
    raise AssertionError(f"tests answer input through tasks/update, not the handler: {message}")
