"""fastmcp-temporal vs the raw engine vs fastmcp-tasks, side by side in one run.

    .venv/bin/python bench/compare.py --n 300 --concurrency 1 20 > bench/results/compare.md
    .venv/bin/python bench/compare.py --n 600 --rounds 6 --only "durable sync" "HTTP path alone"

Workload: a no-op ``echo`` task tool. Every system runs the same driver on the
same machine in the same run: ``concurrency`` workers, each creating a task,
then polling it every ``--poll-ms`` until it is terminal (or as a row says).

- **fastmcp-temporal**: the embedded default (``TemporalTasks()``: local dev
  server on a SQLite file in WAL mode, in-process worker), FastMCP ``Client``
  with the ``fastmcp_tasks`` client half, in-memory transport; the same tool
  declared short (FastMCP ``timeout=10``), whose legs are local by default.
- **fastmcp-temporal with spec clients** over streamable HTTP (uvicorn in this
  process, raw JSON-RPC over one ``httpx`` pool; the tool keeps FastMCP's
  default interval, so ``pollIntervalMs`` adapts): a client that sleeps each
  answer's ``pollIntervalMs`` before the next ``tasks/get``, and a listening
  client (``subscriptions/listen`` right after ``tools/call``, done at the
  ``notifications/tasks`` frame that shows the task finished, result included),
  also for the short tool.
  A synchronous ``tools/call`` over the same HTTP path is their floor; a
  ``tools/call`` of a ``task=True`` tool *without* the tasks extension is a
  durable synchronous call (the task's workflow, answered at its end), also
  for the short tool; its *before* rows run the task workflow in Temporal's
  sandbox, as it ran before it became ``sandboxed=False`` (``sandbox_toggle``), or
  start tasks at patch level 0, recording every patch marker as before
  ``workflows/patches.py`` (``patch_level_zero``); both tools also with a
  ``progressToken`` on every call (as FastMCP's ``Client`` and Claude Code send).
  A second embedded server, its dev server started as before its transfer-queue
  reader was unthrottled (``transfer_reader_limited``), serves the same default
  tool's plain call and the raw eager-start row, *before* both. The ratios add
  the CPU budget the throughput target leaves a durable sync call
  (``print_cpu_budget``).
- **raw engine** on the *same* dev server: plain ``temporalio`` client and
  worker, one workflow with one activity; also with a local activity, and with
  eager workflow start (and both). ``start_workflow`` is "create"; a row either
  waits on ``result()`` (a long poll, no polling cost: the ceiling) or polls a
  ``status`` query until it says ``completed``, as MCP clients poll ``tasks/get``.
- **FastMCP synchronous ``tools/call``** of the same tool, no task: the MCP
  request path alone, the floor under any task's create latency.
- **fastmcp-tasks 4.1.4** (the peer) on Docket ``memory://`` and on a real
  ``redis-server`` with ``appendonly yes`` (durable like Temporal), same client.

All systems are up at once and measured round-robin (``--rounds``, each row's
``n`` split between the rounds), so a slow spell of the machine hits every row
alike; the ratios the script prints at the end are between rows of that run.
CPU seconds per task are read from ``/proc`` for this process (client, MCP
server and worker) and for the backend process (Temporal dev server or Redis).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastmcp_tasks  # noqa: F401  (client half)
import httpx
from fastmcp import Client
from fastmcp.utilities.tests import run_server_async
from fastmcp_tasks import TasksExtension, call_tool_task
from support.mcp_http import McpHttp
from support.measure import cpu_seconds, pct
from support.raw_engine import EchoWorkflow, echo_activity
from support.sandbox_toggle import task_workflows_sandboxed
from support.servers import echo_server, redis_server
from support.smoke import parse_args
from support.sync_before import patch_level_zero, transfer_reader_limited
from temporalio.client import Client as TemporalClient
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from fastmcp_temporal import TemporalTasks

TERMINAL = {"completed", "failed", "cancelled"}


@dataclass
class Run:
    creates: list[float] = field(default_factory=list)
    gets: list[float] = field(default_factory=list)
    e2e: list[float] = field(default_factory=list)
    errors: int = 0


# A system: (create, get) callables; get returns the status string.
Create = Callable[[int], Awaitable[Any]]
Get = Callable[[Any], Awaitable[str]]
#: How long a client that honours ``pollIntervalMs`` waits before its next read.
Delay = Callable[[Any], float]


async def drive(
    n: int,
    concurrency: int,
    create: Create,
    get: Get,
    poll_s: float,
    finish: Get | None = None,
    delay: Delay | None = None,
) -> tuple[Run, float]:
    run = Run()
    next_index = iter(range(n))

    async def worker() -> None:
        for i in next_index:
            try:
                started = time.perf_counter()
                handle = await create(i)
                run.creates.append(time.perf_counter() - started)
                if finish is not None:
                    await finish(handle)
                elif delay is not None:
                    status = ""
                    while status not in TERMINAL:
                        await asyncio.sleep(delay(handle))
                        before = time.perf_counter()
                        status = await get(handle)
                        run.gets.append(time.perf_counter() - before)
                else:
                    while True:
                        before = time.perf_counter()
                        status = await get(handle)
                        run.gets.append(time.perf_counter() - before)
                        if status in TERMINAL:
                            break
                        await asyncio.sleep(poll_s)
                run.e2e.append(time.perf_counter() - started)
            except Exception:
                run.errors += 1

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return run, time.perf_counter() - began


def mcp_sync_call(client: Client) -> tuple[Create, Get]:
    """A plain, synchronous ``tools/call`` of the same no-op tool: no task, no backend.

    Its latency is the floor of any task's "create": the MCP request path
    (JSON-RPC, middleware, tool lookup, argument validation) that every task
    creation also takes before it reaches its backend.
    """

    async def create(i: int) -> Any:
        return await client.call_tool("echo_sync", {"text": str(i)})

    async def get(result: Any) -> str:
        return "completed"

    return create, get


def http_sync_call(wire: McpHttp) -> tuple[Create, Get]:
    """The synchronous ``tools/call`` over streamable HTTP: the floor of the HTTP rows."""

    async def create(i: int) -> Any:
        return await wire.result("tools/call", {"name": "echo_sync", "arguments": {"text": str(i)}})

    async def get(result: Any) -> str:
        return "completed"

    return create, get


def http_durable_sync_call(
    wire: McpHttp, tool: str, progress_token: bool = False
) -> tuple[Create, Get]:
    """A ``tools/call`` without the tasks extension: a task's workflow, answered at its end.

    ``progress_token``: the call carries one, as FastMCP's ``Client`` and Claude Code's do.
    """

    async def create(i: int) -> Any:
        params = {"name": tool, "arguments": {"text": str(i)}}
        meta = {"progressToken": f"p{i}"} if progress_token else None
        return await wire.result("tools/call", params, declare_tasks=False, meta=meta)

    async def get(result: Any) -> str:
        return "completed"

    return create, get


def http_task_calls(wire: McpHttp, tool: str) -> tuple[Create, Get, Delay, Get]:
    """A spec client's task: created, then read (honouring ``pollIntervalMs``) or listened to."""

    async def create(i: int) -> dict[str, Any]:
        created = await wire.result("tools/call", {"name": tool, "arguments": {"text": str(i)}})
        return {"task": created}

    async def get(handle: dict[str, Any]) -> str:
        handle["task"] = await wire.result("tasks/get", {"taskId": handle["task"]["taskId"]})
        return str(handle["task"]["status"])

    def delay(handle: dict[str, Any]) -> float:
        return float(handle["task"]["pollIntervalMs"]) / 1000

    async def listen(handle: dict[str, Any]) -> str:
        handle["task"] = await wire.listen_until_finished(handle["task"]["taskId"])
        return str(handle["task"]["status"])

    return create, get, delay, listen


def mcp_task_calls(client: Client, tool: str) -> tuple[Create, Get]:
    async def create(i: int) -> Any:
        return await call_tool_task(client, tool, {"text": str(i)})

    async def get(task: Any) -> str:
        return (await task.status()).status

    return create, get


@dataclass
class System:
    """One row: how to create and read a task, and whose CPU is the backend's."""

    name: str
    create: Create
    get: Get
    backend_pid: Callable[[], int | None]
    finish: Get | None = None
    delay: Delay | None = None
    #: Entered around each of this row's measurements (rows are measured one at a time).
    setup: Callable[[], Any] | None = None


@dataclass
class Totals:
    """One row's samples, summed over the interleaved rounds."""

    run: Run = field(default_factory=Run)
    elapsed: float = 0.0
    cpu_me: float = 0.0
    cpu_backend: float = 0.0

    @property
    def tasks_per_s(self) -> float:
        return len(self.run.e2e) / self.elapsed

    def text(self, name: str, concurrency: int) -> str:
        run, done = self.run, len(self.run.e2e)
        return (
            f"| {name} | {concurrency} | {self.tasks_per_s:.1f} | "
            f"{pct(run.creates, 0.5):.1f} / {pct(run.creates, 0.99):.1f} | "
            f"{pct(run.gets, 0.5):.1f} / {pct(run.gets, 0.99):.1f} | "
            f"{pct(run.e2e, 0.5):.0f} / {pct(run.e2e, 0.99):.0f} | "
            f"{self.cpu_me / done * 1000:.1f} | {self.cpu_backend / done * 1000:.1f} | "
            f"{run.errors} |"
        )


async def warm_up(system: System, calls: int) -> None:
    """First calls pay for pollers, caches and sandboxes; they are not measured."""
    for i in range(calls):
        handle = await system.create(i)
        if system.finish is not None:
            await system.finish(handle)
        elif system.delay is not None:
            while await system.get(handle) not in TERMINAL:
                await asyncio.sleep(system.delay(handle))
        else:
            while await system.get(handle) not in TERMINAL:
                await asyncio.sleep(0.01)


async def measure_once(system: System, totals: Totals, n: int, concurrency: int, poll_s: float):
    me, pid = os.getpid(), system.backend_pid()
    cpu_me, cpu_backend = cpu_seconds(me), cpu_seconds(pid) if pid else 0.0
    run, elapsed = await drive(
        n, concurrency, system.create, system.get, poll_s, system.finish, system.delay
    )
    totals.cpu_me += cpu_seconds(me) - cpu_me
    totals.cpu_backend += (cpu_seconds(pid) - cpu_backend) if pid else float("nan")
    totals.elapsed += elapsed
    totals.run.creates += run.creates
    totals.run.gets += run.gets
    totals.run.e2e += run.e2e
    totals.run.errors += run.errors


async def raw_systems(
    stack: AsyncExitStack,
    address: str,
    dev_pid: Callable[[], int | None],
    configurations: list[tuple[str, bool, bool]] | None = None,
) -> list[System]:
    """The raw engine on our dev server: each configuration waited on and polled.

    Unsandboxed, as our task workflows run: the best the raw engine does.
    """
    raw = await TemporalClient.connect(address)
    systems: list[System] = []
    for label, local, eager in configurations or [
        (RAW_START, False, False),
        ("raw engine: workflow + local activity", True, False),
        (RAW_EAGER, False, True),
        (RAW_EAGER_LOCAL, True, True),
    ]:
        queue = f"raw-local-{local}-eager-{eager}-{uuid.uuid4().hex[:6]}"
        await stack.enter_async_context(
            Worker(
                raw,
                task_queue=queue,
                workflows=[EchoWorkflow],
                activities=[echo_activity],
                workflow_runner=UnsandboxedWorkflowRunner(),
            )
        )

        async def create(
            i: int, local: bool = local, eager: bool = eager, queue: str = queue
        ) -> Any:
            return await raw.start_workflow(
                EchoWorkflow.run,
                args=["x", local],
                id=f"{queue}-{i}-{time.time_ns()}",
                task_queue=queue,
                request_eager_start=eager,
            )

        async def get(handle: Any) -> str:
            return str(await handle.query(EchoWorkflow.status))

        async def finish(handle: Any) -> str:
            await handle.result()
            return "completed"

        systems.append(System(label, create, get, dev_pid, finish=finish))
        systems.append(System(label + " (polled by query)", create, get, dev_pid))
    return systems


def quiet_access_log() -> None:
    """Silence uvicorn's access log, again after every server start: each start
    configures logging anew and re-enables it.

    One line per request would be this process's CPU, and stdout is the results file.
    """
    logging.getLogger("uvicorn.access").disabled = True


async def spec_client_systems(
    stack: AsyncExitStack, data_dir: str, dev_pid: Callable[[], int | None]
) -> list[System]:
    """fastmcp-temporal's default behind streamable HTTP, read by spec clients.

    A second server on the same data directory joins the same dev server; its
    own name gives it its own task queue and in-process worker.
    """
    served = echo_server(TemporalTasks(data_dir=data_dir, ui=False), "bench-http", adaptive=True)
    url = await stack.enter_async_context(run_server_async(served))
    quiet_access_log()
    # Idle connections are dropped before uvicorn's 5 s keep-alive closes them under a request.
    http = await stack.enter_async_context(
        httpx.AsyncClient(
            timeout=httpx.Timeout(60, read=None), limits=httpx.Limits(keepalive_expiry=1.0)
        )
    )
    wire = McpHttp(url, http)
    create, get, delay, listen = http_task_calls(wire, "echo")
    create_short, get_short, _, listen_short = http_task_calls(wire, "echo_short")
    return [
        System(OURS_POLL_INTERVAL, create, get, dev_pid, delay=delay),
        System(OURS_LISTEN, create, get, dev_pid, finish=listen),
        System(OURS_LISTEN_SHORT, create_short, get_short, dev_pid, finish=listen_short),
        System(HTTP_SYNC_FLOOR, *http_sync_call(wire), lambda: None),
        System(OURS_DURABLE_SYNC, *http_durable_sync_call(wire, "echo_plain"), dev_pid),
        System(OURS_DURABLE_SYNC_SHORT, *http_durable_sync_call(wire, "echo_plain_short"), dev_pid),
        System(
            OURS_DURABLE_SYNC_BEFORE,
            *http_durable_sync_call(wire, "echo_plain"),
            dev_pid,
            setup=task_workflows_sandboxed,
        ),
        System(
            OURS_DURABLE_SYNC_SHORT_BEFORE,
            *http_durable_sync_call(wire, "echo_plain_short"),
            dev_pid,
            setup=task_workflows_sandboxed,
        ),
        System(
            OURS_DURABLE_SYNC_LEVEL_ZERO,
            *http_durable_sync_call(wire, "echo_plain"),
            dev_pid,
            setup=patch_level_zero,
        ),
        System(
            OURS_DURABLE_SYNC_SHORT_LEVEL_ZERO,
            *http_durable_sync_call(wire, "echo_plain_short"),
            dev_pid,
            setup=patch_level_zero,
        ),
        System(
            OURS_DURABLE_SYNC_SHORT_TOKEN,
            *http_durable_sync_call(wire, "echo_plain_short", progress_token=True),
            dev_pid,
        ),
        System(
            OURS_DURABLE_SYNC_TOKEN,
            *http_durable_sync_call(wire, "echo_plain", progress_token=True),
            dev_pid,
        ),
    ]


async def limited_systems(stack: AsyncExitStack) -> list[System]:
    """A second embedded server whose dev server starts as before its transfer-queue reader
    was unthrottled: the default tool's plain call, and the raw eager-start row, on it."""
    data_dir = tempfile.mkdtemp(prefix="bench-temporal-limited-")
    extension = TemporalTasks(data_dir=data_dir, ui=False)
    served = echo_server(extension, "bench-limited", adaptive=True)
    with transfer_reader_limited():
        url = await stack.enter_async_context(run_server_async(served))
    quiet_access_log()
    assert extension.dev_server is not None
    dev_pid = extension.dev_server.temporal_pid
    http = await stack.enter_async_context(
        httpx.AsyncClient(
            timeout=httpx.Timeout(60, read=None), limits=httpx.Limits(keepalive_expiry=1.0)
        )
    )
    wire = McpHttp(url, http)
    systems = [
        System(
            OURS_DURABLE_SYNC_LIMITED, *http_durable_sync_call(wire, "echo_plain"), lambda: dev_pid
        )
    ]
    raw_rows = [(RAW_EAGER_LIMITED, False, True)]
    address = extension.dev_server.address
    systems += await raw_systems(stack, address, lambda: dev_pid, raw_rows)
    return [system for system in systems if "polled" not in system.name]


async def apart_systems(
    stack: AsyncExitStack, address: str, dev_pid: Callable[[], int | None]
) -> list[System]:
    """Durable sync calls to a front end with ``run_worker=False``, its worker in its own process.

    No eager start: each workflow task goes through the worker's poller. The
    worker's CPU is neither this process's nor the backend's (not counted).
    """
    queue = f"bench-apart-{uuid.uuid4().hex[:8]}"
    worker = subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / "support" / "echo_worker.py"), address, queue],
        stdout=subprocess.PIPE,
    )
    stack.callback(worker.wait, 30)
    stack.callback(worker.terminate)
    assert worker.stdout is not None and worker.stdout.readline().strip() == b"ready"
    front_end = TemporalTasks(address=address, task_queue=queue, run_worker=False)
    served = echo_server(front_end, "bench-apart", adaptive=True)
    url = await stack.enter_async_context(run_server_async(served))
    logging.getLogger("uvicorn.access").disabled = True  # each server's start turns it on again
    http = await stack.enter_async_context(
        httpx.AsyncClient(
            timeout=httpx.Timeout(60, read=None), limits=httpx.Limits(keepalive_expiry=1.0)
        )
    )
    wire = McpHttp(url, http)
    return [
        System(OURS_DURABLE_SYNC_APART, *http_durable_sync_call(wire, "echo_plain"), dev_pid),
        System(
            OURS_DURABLE_SYNC_SHORT_APART,
            *http_durable_sync_call(wire, "echo_plain_short"),
            dev_pid,
        ),
    ]


async def main(
    n: int,
    concurrencies: list[int],
    poll_ms: int,
    rounds: int,
    only: list[str],
    warm_up_calls: int = 10,
    redis: bool = True,
    skip: tuple[str, ...] = (),
) -> None:
    poll_s = poll_ms / 1000
    async with AsyncExitStack() as stack:
        # 1. fastmcp-temporal, embedded default (a tool, and a short tool: local legs).
        data_dir = tempfile.mkdtemp(prefix="bench-temporal-")
        extension = TemporalTasks(data_dir=data_dir, ui=False)
        ours = await stack.enter_async_context(Client(echo_server(extension)))
        assert extension.dev_server is not None
        dev_pid = extension.dev_server.temporal_pid
        systems = [
            System(OURS, *mcp_task_calls(ours, "echo"), lambda: dev_pid),
            System(OURS_LOCAL, *mcp_task_calls(ours, "echo_short"), lambda: dev_pid),
            System(SYNC_FLOOR, *mcp_sync_call(ours), lambda: None),
        ]
        systems += await spec_client_systems(stack, data_dir, lambda: dev_pid)

        def wanted(name: str) -> bool:
            return not only or any(part in name for part in only)

        if wanted(OURS_DURABLE_SYNC_APART) or wanted(OURS_DURABLE_SYNC_SHORT_APART):
            address = extension.dev_server.address
            systems += await apart_systems(stack, address, lambda: dev_pid)
        # 2. The raw engine on the same dev server.
        systems += await raw_systems(stack, extension.dev_server.address, lambda: dev_pid)
        # 2b. Both again on a dev server as it ran before its transfer reader was unthrottled.
        if wanted(OURS_DURABLE_SYNC_LIMITED) or wanted(RAW_EAGER_LIMITED):
            systems += await limited_systems(stack)

        # 3. The peer: fastmcp-tasks on Docket, memory:// and Redis with AOF (started
        # only when a row of it is measured: `--only` rows of ours need no redis-server).

        if wanted(PEER_MEMORY):
            memory = await stack.enter_async_context(
                Client(echo_server(TasksExtension(url="memory://")))
            )
            systems.append(System(PEER_MEMORY, *mcp_task_calls(memory, "echo"), lambda: None))
        if redis and wanted(PEER_REDIS):
            url, redis_pid = await stack.enter_async_context(redis_server(appendonly=True))
            redis = await stack.enter_async_context(Client(echo_server(TasksExtension(url=url))))
            systems.append(System(PEER_REDIS, *mcp_task_calls(redis, "echo"), lambda: redis_pid))
        if only:
            systems = [s for s in systems if any(part in s.name for part in only)]
        systems = [s for s in systems if not any(part in s.name for part in skip)]

        for system in systems:
            with system.setup() if system.setup else nullcontext():
                await warm_up(system, warm_up_calls)
        totals = {(s.name, c): Totals() for s in systems for c in concurrencies}
        for concurrency in concurrencies:
            # Round-robin, so that a slow spell of the machine hits every row alike.
            for round_number in range(rounds):
                for system in systems:
                    share = n // rounds + (1 if round_number < n % rounds else 0)
                    with system.setup() if system.setup else nullcontext():
                        await measure_once(
                            system, totals[system.name, concurrency], share, concurrency, poll_s
                        )
            for system in systems:
                # Progress on stderr: stdout is the results file, whose table follows.
                row = totals[system.name, concurrency].text(system.name, concurrency)
                print(row, file=sys.stderr, flush=True)

    print()
    print(
        f"n = {n} tasks per row in {rounds} interleaved rounds, poll every {poll_ms} ms; "
        "latencies in ms (p50 / p99); CPU in ms per task"
    )
    print()
    print(
        "| system | concurrency | tasks/s | create p50 / p99 | get p50 / p99 | "
        "end to end p50 / p99 | CPU this process | CPU backend | errors |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for concurrency in concurrencies:
        for system in systems:
            print(totals[system.name, concurrency].text(system.name, concurrency))
    print()
    print_ratios(totals, [s.name for s in systems], concurrencies)


RAW_START = "raw engine: workflow + activity"
RAW_EAGER = "raw engine: workflow + activity, eager start"
RAW_EAGER_LOCAL = "raw engine: workflow + local activity, eager start"
PEER_MEMORY = "fastmcp-tasks, Docket memory://"
PEER_REDIS = "fastmcp-tasks, Redis (AOF on)"
OURS = "fastmcp-temporal (embedded dev server)"
OURS_LOCAL = "fastmcp-temporal, a short tool (`timeout=10`: local legs by default)"
OURS_POLL_INTERVAL = "fastmcp-temporal, HTTP client honouring `pollIntervalMs` (adaptive)"
OURS_LISTEN = "fastmcp-temporal, HTTP listening client (`subscriptions/listen`)"
OURS_LISTEN_SHORT = "fastmcp-temporal, HTTP listening client, a short tool (local legs)"
SYNC_FLOOR = "FastMCP synchronous `tools/call`, no task (the MCP path alone)"
HTTP_SYNC_FLOOR = "FastMCP synchronous `tools/call` over HTTP, no task (the HTTP path alone)"
OURS_DURABLE_SYNC = "fastmcp-temporal, HTTP client without the tasks extension (durable sync call)"
OURS_DURABLE_SYNC_SHORT = "fastmcp-temporal, durable sync call, a short tool (local legs)"
OURS_DURABLE_SYNC_APART = "fastmcp-temporal, durable sync call, separate worker process"
OURS_DURABLE_SYNC_SHORT_APART = (
    "fastmcp-temporal, durable sync call, a short tool (local legs), separate worker process"
)
OURS_DURABLE_SYNC_BEFORE = OURS_DURABLE_SYNC + ", before (task workflow sandboxed)"
OURS_DURABLE_SYNC_SHORT_BEFORE = OURS_DURABLE_SYNC_SHORT + ", before (task workflow sandboxed)"
OURS_DURABLE_SYNC_LEVEL_ZERO = OURS_DURABLE_SYNC + ", before (patch level 0: patch markers)"
OURS_DURABLE_SYNC_SHORT_LEVEL_ZERO = (
    OURS_DURABLE_SYNC_SHORT + ", before (patch level 0: patch markers)"
)
OURS_DURABLE_SYNC_SHORT_TOKEN = OURS_DURABLE_SYNC_SHORT + ", with a `progressToken`"
OURS_DURABLE_SYNC_TOKEN = OURS_DURABLE_SYNC + ", with a `progressToken`"
#: On the second dev server, started as before its transfer-queue reader was unthrottled.
LIMITED = ", dev server before (transfer reader at 20 reads/s)"
OURS_DURABLE_SYNC_LIMITED = OURS_DURABLE_SYNC + LIMITED
RAW_EAGER_LIMITED = RAW_EAGER + LIMITED
#: The issue's targets are set against this row (eager start + local activity + ``result()``).
DURABLE_SYNC_ROWS = (
    OURS_DURABLE_SYNC,
    OURS_DURABLE_SYNC_SHORT,
    OURS_DURABLE_SYNC_BEFORE,
    OURS_DURABLE_SYNC_SHORT_BEFORE,
    OURS_DURABLE_SYNC_LEVEL_ZERO,
    OURS_DURABLE_SYNC_SHORT_LEVEL_ZERO,
    OURS_DURABLE_SYNC_SHORT_TOKEN,
    OURS_DURABLE_SYNC_TOKEN,
    OURS_DURABLE_SYNC_LIMITED,
    OURS_DURABLE_SYNC_APART,
    OURS_DURABLE_SYNC_SHORT_APART,
)
#: Our rows, each set against the best raw row and the best raw row polled like MCP clients poll.
OURS_ROWS = (
    OURS,
    OURS_LOCAL,
    OURS_POLL_INTERVAL,
    OURS_LISTEN,
    OURS_LISTEN_SHORT,
    OURS_DURABLE_SYNC,
    OURS_DURABLE_SYNC_SHORT,
    OURS_DURABLE_SYNC_APART,
    OURS_DURABLE_SYNC_SHORT_APART,
)


def print_ratios(
    totals: dict[tuple[str, int], Totals], names: list[str], concurrencies: list[int]
) -> None:
    """The issue's targets, as ratios between rows of this one run."""
    print("| ratio (this run) | concurrency | value |")
    print("|---|---|---|")
    for concurrency in concurrencies:
        at = {name: totals[name, concurrency] for name in names}
        if not any(name.startswith("raw engine") for name in names):
            continue
        best_raw = max(
            (name for name in names if name.startswith("raw engine")),
            key=lambda name: at[name].tasks_per_s,
        )
        polled = [name for name in names if name.startswith("raw engine") and "polled" in name]
        best_polled = [max(polled, key=lambda name: at[name].tasks_per_s)] if polled else []
        for name in (name for name in OURS_ROWS if name in at):
            for best in (best_raw, *best_polled):
                ours, raw = at[name].tasks_per_s, at[best].tasks_per_s
                print(
                    f"| throughput {name} / {best} | {concurrency} | "
                    f"{ours:.1f} / {raw:.1f} = **{ours / raw:.2f} x** |"
                )
        for name in (name for name in DURABLE_SYNC_ROWS if name in at):
            raw_name = raw_of(name)
            if raw_name not in at:
                continue
            ours, raw = at[name], at[raw_name]
            p50, floor = pct(ours.run.e2e, 0.5), pct(raw.run.e2e, 0.5)
            print(
                f"| end to end p50 {name} - {raw_name} (target <= +10 ms) | "
                f"{concurrency} | {p50:.1f} - {floor:.1f} = **{p50 - floor:+.1f} ms** |"
            )
            print(
                f"| throughput {name} / {raw_name} (target >= 0.85 x) | {concurrency} | "
                f"{ours.tasks_per_s:.1f} / {raw.tasks_per_s:.1f} = "
                f"**{ours.tasks_per_s / raw.tasks_per_s:.2f} x** |"
            )
        if HTTP_SYNC_FLOOR in at and concurrency > 1:  # at 1 no row is CPU-bound
            print_cpu_budget(at, concurrency)
        if RAW_START not in at:
            continue
        start = pct(at[RAW_START].run.creates, 0.5)
        for name in (name for name in (OURS, SYNC_FLOOR, HTTP_SYNC_FLOOR) if name in at):
            create = pct(at[name].run.creates, 0.5)
            print(
                f"| create p50 {name} / raw `start_workflow` | {concurrency} | "
                f"{create:.1f} / {start:.1f} ms = **{create / start:.2f} x** |"
            )
        for name in (name for name in (OURS, OURS_LOCAL, OURS_POLL_INTERVAL) if name in at):
            print(
                f"| `tasks/get` p50 {name} | {concurrency} | "
                f"**{pct(at[name].run.gets, 0.5):.1f} ms** |"
            )


def raw_of(name: str) -> str:
    """The raw row of a durable row's shape: its leg's kind, its dev server."""
    if LIMITED in name:
        return RAW_EAGER_LIMITED
    return RAW_EAGER_LOCAL if "short tool" in name else RAW_EAGER


def print_cpu_budget(at: dict[str, Totals], concurrency: int) -> None:
    """What the throughput target leaves a durable sync call's CPU, and where it goes over.

    Where every row is CPU-bound (concurrency 20 on 2 cores), throughput is about the
    cores a row keeps busy over the CPU one call costs (this process + the dev server).
    A durable sync call does at least the HTTP path's work and the raw row's: at the raw
    row's calls per CPU second, that reaches raw * raw_cpu / (raw_cpu + http_cpu).
    """
    http = at[HTTP_SYNC_FLOOR]
    http_cpu = http.cpu_me / len(http.run.e2e) * 1000
    for raw_name, rows in (
        (RAW_EAGER_LOCAL, (OURS_DURABLE_SYNC_SHORT, OURS_DURABLE_SYNC_SHORT_TOKEN)),
        (RAW_EAGER, (OURS_DURABLE_SYNC, OURS_DURABLE_SYNC_TOKEN)),
    ):
        if raw_name not in at:
            continue
        raw = at[raw_name]
        raw_me = raw.cpu_me / len(raw.run.e2e) * 1000
        raw_backend = raw.cpu_backend / len(raw.run.e2e) * 1000
        floor = raw_me + raw_backend + http_cpu
        estimate = raw.tasks_per_s * (raw_me + raw_backend) / floor
        print(
            f"| CPU per call, the HTTP path alone + {raw_name} "
            f"(this process + dev server) | {concurrency} | {http_cpu:.1f} + {raw_me:.1f} + "
            f"{raw_backend:.1f} = **{floor:.1f} ms**: at the raw row's calls per CPU second, "
            f"{estimate:.1f}/s = **{estimate / raw.tasks_per_s:.2f} x** |"
        )
        for name in (name for name in rows if name in at):
            ours = at[name]
            me = ours.cpu_me / len(ours.run.e2e) * 1000
            backend = ours.cpu_backend / len(ours.run.e2e) * 1000
            print(
                f"| CPU per call, {name} | {concurrency} | {me:.1f} + {backend:.1f} = "
                f"**{me + backend:.1f} ms**, {me + backend - floor:+.1f} over that: this process "
                f"{me - raw_me - http_cpu:+.1f}, the dev server {backend - raw_backend:+.1f} |"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 20])
    parser.add_argument("--poll-ms", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--only", nargs="*", default=[], help="only the rows whose name contains one of these"
    )
    parser.add_argument(
        "--skip", nargs="*", default=[], help="not the rows whose name contains one of these"
    )
    parser.add_argument("--warm-up", type=int, default=10, help="unmeasured calls per row first")
    parser.add_argument(
        "--no-redis", action="store_true", help="leave out the peer on Redis (needs redis-server)"
    )
    args = parse_args(parser, n=2, concurrency=[1, 2], rounds=1, warm_up=1, no_redis=True)
    asyncio.run(
        main(
            args.n,
            args.concurrency,
            args.poll_ms,
            args.rounds,
            args.only,
            args.warm_up,
            not args.no_redis,
            tuple(args.skip),
        )
    )
