"""Time to result: how soon after a tool returns its client knows, and reads with no worker.

    .venv/bin/python bench/time_to_result.py --n 40 --rounds 4 --out bench/results/time_to_result.md
    .venv/bin/python bench/time_to_result.py --n 10 --rounds 10 --reads 20 \
        --out bench/results/time_to_result_one_at_a_time.md

Part 1 -- completion latency. A ``crunch`` tool sleeps 2 s (``--tool-s``) and records the
moment it returns; each client records the moment it learns the task is
``completed``. Both servers run in this process behind real streamable HTTP
(uvicorn on 127.0.0.1): fastmcp-temporal embedded (``TemporalTasks()``, its own
dev server, in-process worker) and the peer fastmcp-tasks 4.1.4 on a real
``redis-server`` with ``appendonly yes`` (``--no-redis`` leaves it out). Clients:

(a) a spec client honouring ``pollIntervalMs``: ``tasks/get``, sleep the
    interval the last answer carried, repeat (raw JSON-RPC over one HTTP client);
(b) the FastMCP ``Client`` with ``fastmcp_tasks``' back-off (``ToolTask.result()``);
(c) a listening client: ``subscriptions/listen`` with the task id right after
    ``tools/call``, done at the first ``notifications/tasks`` saying
    ``completed`` (fastmcp-temporal only: the peer answers ``-32601``);
    row (c, before) follows its tasks with the watcher as it was before
    (``support/watch_before.py``: a read on every wake), on the same server; row (c,
    a short tool) calls the same body declared with FastMCP's ``timeout=10``,
    so its legs run as local activities (the default for short tools).

Each listening task's time is then split along Temporal's own record (event
times of its history): the tool returned → the leg's completion recorded →
the workflow task that ends the run started → the run completed → the client
knows (the long poll's answer, the frame, the stream).

Rows are measured round-robin (``--rounds``), ``n / rounds`` tasks of one row
at a time, concurrently, so a slow spell of the shared machine hits every row.

Part 2 -- ``tasks/get`` with no worker, right after a ``tasks/update``: parked
tasks on a front end with ``run_worker=False`` whose worker has stopped; each
sample is the first ``tasks/get`` after answering (FastMCP client, in memory).
The row below it times what that read used to do (a query to the workflow,
``rpc_timeout`` = the 2 s ``query_timeout``) for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import fastmcp_tasks  # noqa: F401  (the client half of the tasks extension)
import httpx
import mcp_types
from fastmcp import Client, Context, FastMCP
from fastmcp.utilities.tests import run_server_async
from fastmcp_tasks import TasksExtension, call_tool_task
from fastmcp_tasks.client import _send_update
from support.mcp_http import McpHttp
from support.servers import redis_server
from support.smoke import parse_args
from support.watch_before import serve_tasks_the_old_way
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import McpTasksPlugin, TemporalTasks
from fastmcp_temporal.server.tasks import task_watch
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.workflows.models import VIEW_QUERY

OURS, PEER = "fastmcp-temporal", "fastmcp-tasks on Redis"
POLLING = "client honouring pollIntervalMs"
FASTMCP = "FastMCP client (fastmcp_tasks back-off)"
LISTENING = "fastmcp-temporal, (c) listening client (subscriptions/listen)"
LISTENING_BEFORE = "fastmcp-temporal, (c, before) listening client, a read on every wake"
LISTENING_SHORT = "fastmcp-temporal, (c) listening client, a short tool (`timeout=10`: local legs)"
LISTENING_APART = (
    "fastmcp-temporal, (c, worker apart) listening client; front end without a worker, "
    "the worker in its own process"
)
#: When each crunch call returned (wall clock), by its token.
FINISHED: dict[str, float] = {}
#: The task each listening client followed, and when it learned the task completed.
LISTENED: dict[str, str] = {}
KNEW: dict[str, float] = {}
#: When a watcher's long poll handed back a run's completion, by workflow id.
CLOSE_SEEN: dict[str, float] = {}


@contextlib.contextmanager
def timing_close_wakes() -> Iterator[None]:
    """Record when each watcher's history long poll returns a run's completion event.

    It splits "run completed → client knows" into Temporal's part (the commit,
    the long poll's wake and history read, the answer's trip to this process)
    and ours (decoding the final task, the frame, the stream, the client).
    """
    tail = task_watch.HistoryTail
    current = tail.next_change

    async def next_change(self: Any) -> list[HistoryEvent] | None:
        events = await current(self)
        if events and events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            CLOSE_SEEN.setdefault(self._workflow_id, time.time())
        return events

    tail.next_change = next_change  # type: ignore[method-assign]
    try:
        yield
    finally:
        tail.next_change = current  # type: ignore[method-assign]


def crunch_server(extension: Any, tool_s: float) -> FastMCP:
    mcp = FastMCP("bench")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def crunch(token: str) -> str:
        await asyncio.sleep(tool_s)
        FINISHED[token] = time.time()
        return token

    # The same body, declared short (a FastMCP ``timeout`` below 30 s): local legs by default.
    @mcp.tool(task=True, timeout=10)
    async def crunch_short(token: str) -> str:
        await asyncio.sleep(tool_s)
        FINISHED[token] = time.time()
        return token

    return mcp


Client_ = Callable[[str], Awaitable[float]]  # token -> when the client learned "completed"


def polling_client(wire: McpHttp) -> Client_:
    async def run(token: str) -> float:
        task = await wire.result("tools/call", {"name": "crunch", "arguments": {"token": token}})
        while task["status"] not in ("completed", "failed", "cancelled"):
            await asyncio.sleep(task["pollIntervalMs"] / 1000)
            task = await wire.result("tasks/get", {"taskId": task["taskId"]})
        return time.time()

    return run


def fastmcp_client(client: Client) -> Client_:
    async def run(token: str) -> float:
        task = await call_tool_task(client, "crunch", {"token": token})
        await task.result()
        return time.time()

    return run


def listening_client(
    wire: McpHttp, old_way: set[str] | None = None, tool: str = "crunch"
) -> Client_:
    """Row (c); with ``old_way``, its tasks are followed by the watcher as it was before."""

    async def run(token: str) -> float:
        task = await wire.result("tools/call", {"name": tool, "arguments": {"token": token}})
        LISTENED[token] = task["taskId"]
        if old_way is not None:
            old_way.add(task["taskId"])
        async with wire.listen(task["taskId"]) as frames:
            async for frame in frames:
                method, params = frame.get("method"), frame.get("params", {})
                if method == "notifications/tasks" and params["status"] == "completed":
                    KNEW[token] = time.time()
                    if token not in FINISHED:  # the tool ran in another process: it says when
                        FINISHED[token] = float(params["result"]["content"][0]["text"].split()[1])
                    return KNEW[token]
        raise RuntimeError("listen stream ended before completion")

    return run


def _cpu_seconds(*pids: int) -> float:
    """User + system CPU of this process and of the other processes ``pids``."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = time.process_time()
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def completion_latency(n: int, rounds: int, tool_s: float, redis: bool) -> list[str]:
    async with contextlib.AsyncExitStack() as stack:
        data_dir = Path(tempfile.mkdtemp(prefix="bench-ttr-"))
        ours = TemporalTasks(data_dir=data_dir, ui=False)
        ours_url = await stack.enter_async_context(run_server_async(crunch_server(ours, tool_s)))
        old_way = stack.enter_context(serve_tasks_the_old_way())
        stack.enter_context(timing_close_wakes())
        assert ours.dev_server is not None
        apart_queue = f"ttr-apart-{uuid.uuid4().hex[:8]}"
        worker_script = str(Path(__file__).parent / "support" / "crunch_worker.py")
        worker = subprocess.Popen(
            [sys.executable, worker_script, ours.dev_server.address, apart_queue, str(tool_s)],
            stdout=subprocess.PIPE,
        )
        stack.callback(worker.wait, 30)
        stack.callback(worker.terminate)
        assert worker.stdout is not None and worker.stdout.readline().strip() == b"ready"
        front_end = TemporalTasks(
            address=ours.dev_server.address, task_queue=apart_queue, run_worker=False
        )
        apart_url = await stack.enter_async_context(
            run_server_async(crunch_server(front_end, tool_s))
        )
        # Idle connections are dropped before uvicorn's 5 s keep-alive closes
        # them under a request (a client sleeping a 5 s interval would race it).
        limits = httpx.Limits(keepalive_expiry=1.0)
        http = await stack.enter_async_context(
            httpx.AsyncClient(timeout=httpx.Timeout(60, read=None), limits=limits)
        )
        ours_client = await stack.enter_async_context(Client(ours_url))
        rows: dict[str, Client_] = {
            "fastmcp-temporal, (a) client honouring pollIntervalMs": polling_client(
                McpHttp(ours_url, http)
            ),
            "fastmcp-temporal, (b) FastMCP client (fastmcp_tasks back-off)": fastmcp_client(
                ours_client
            ),
            LISTENING: listening_client(McpHttp(ours_url, http)),
            LISTENING_BEFORE: listening_client(McpHttp(ours_url, http), old_way),
            LISTENING_APART: listening_client(McpHttp(apart_url, http)),
            LISTENING_SHORT: listening_client(McpHttp(ours_url, http), tool="crunch_short"),
        }
        if redis:
            redis_url, _ = await stack.enter_async_context(redis_server(appendonly=True))
            peer_url = await stack.enter_async_context(
                run_server_async(crunch_server(TasksExtension(url=redis_url), tool_s))
            )
            peer_client = await stack.enter_async_context(Client(peer_url))
            rows["fastmcp-tasks on Redis, (a) client honouring pollIntervalMs"] = polling_client(
                McpHttp(peer_url, http)
            )
            rows["fastmcp-tasks on Redis, (b) FastMCP client (fastmcp_tasks back-off)"] = (
                fastmcp_client(peer_client)
            )
        for run in rows.values():  # warm up: pollers, caches, connections
            await run(f"warm-{uuid.uuid4().hex}")
        late: dict[str, list[float]] = {name: [] for name in rows}
        total: dict[str, list[float]] = {name: [] for name in rows}
        tokens: dict[str, list[str]] = {name: [] for name in rows}
        per_round = max(1, n // rounds)
        temporal_pid = ours.dev_server.temporal_pid
        cpu = dict.fromkeys(rows, 0.0)
        for _ in range(rounds):
            for name, run in rows.items():

                async def one(run: Client_ = run, name: str = name) -> None:
                    token = uuid.uuid4().hex
                    started = time.time()
                    learned = await run(token)
                    tokens[name].append(token)
                    late[name].append((learned - FINISHED[token]) * 1000)
                    total[name].append((learned - started) * 1000)

                cpu_before = _cpu_seconds(temporal_pid, worker.pid)
                await asyncio.gather(*(one() for _ in range(per_round)))
                cpu[name] += _cpu_seconds(temporal_pid, worker.pid) - cpu_before
        split = {
            name: await where_the_time_goes(ours.engine.client, tokens[name])
            for name in (LISTENING, LISTENING_BEFORE, LISTENING_APART)
        }
    lines = [
        f"Tool runs {tool_s:g} s; {per_round * rounds} tasks per row, "
        f"{per_round} at a time, {rounds} interleaved rounds.",
        "",
        "| system, client | tool returned → client knows p50 / p99 (ms) "
        "| call → client knows p50 / p99 (ms) | CPU per task (ms) |",
        "|---|---|---|---|",
    ]
    for name in rows:
        lines.append(
            f"| {name} | {pct(late[name], 0.5):.0f} / {pct(late[name], 0.99):.0f} "
            f"| {pct(total[name], 0.5):.0f} / {pct(total[name], 0.99):.0f} "
            f"| {cpu[name] * 1000 / len(late[name]):.0f} |"
        )
    lines += [
        "",
        "CPU per task: this process (clients, the MCP servers, the in-process worker) plus "
        "our embedded Temporal dev server and the separate worker process, user + system, "
        "over the row's rounds (the peer's Redis is not counted; other rows carry the idle "
        "share of the processes they do not use).",
    ]
    lines += [
        "",
        "Listening clients: tool returned → client knows, split at the events of each "
        "task's history (p50 of each step, ms; the steps' p50s need not add up to the total's).",
        "",
        "| row | " + " | ".join(STEPS) + " | total | known from a read, not the close wake |",
        "|---|" + "---|" * (len(STEPS) + 2),
    ]
    for name, steps in split.items():
        cells = [f"{pct(steps[step], 0.5):.0f}" for step in [*STEPS, "total"]]
        cells.append(f"{sum(steps['known from a read']):.0f} of {len(steps['total'])}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


#: The steps from the tool's return to the client's knowing, at the history's events.
STEPS = (
    "→ leg's completion recorded",
    "→ the run's last workflow task starts",
    "→ run completed",
    "→ the watcher's long poll answers",
    "→ client knows",
)


async def where_the_time_goes(
    temporal: TemporalClient, tokens: list[str]
) -> dict[str, list[float]]:
    """Each listening task's time split at its history's event times (same machine clock)."""
    steps: dict[str, list[float]] = {step: [] for step in [*STEPS, "total", "known from a read"]}
    for token in tokens:
        workflow_id = workflow_id_for(LISTENED[token], None)
        handle = temporal.get_workflow_handle(workflow_id)
        events = [event async for event in handle.fetch_history_events()]
        leg_done = next(
            e
            for e in reversed(events)
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
        )
        last_task = next(
            e
            for e in events
            if e.event_id > leg_done.event_id
            and e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED
        )
        marks = [
            FINISHED[token],
            *(
                e.event_time.ToDatetime(tzinfo=UTC).timestamp()
                for e in (leg_done, last_task, events[-1])
            ),
            # A progress read can find the task closed before the close wake
            # answers; the frame then owes nothing to the long poll.
            min(CLOSE_SEEN.get(workflow_id, KNEW[token]), KNEW[token]),
            KNEW[token],
        ]
        for step, (before, after) in zip(STEPS, itertools.pairwise(marks), strict=True):
            steps[step].append((after - before) * 1000)
        steps["total"].append((marks[-1] - marks[0]) * 1000)
        steps["known from a read"].append(
            float(CLOSE_SEEN.get(workflow_id, KNEW[token]) >= KNEW[token])
        )
    return steps


async def _never_called(message: str, response_type: Any, params: Any, context: Any) -> Any:
    raise AssertionError(f"answered through tasks/update, not the handler: {message}")


async def reads_without_worker(n: int) -> list[str]:
    data_dir = Path(tempfile.mkdtemp(prefix="bench-ttr-noworker-"))
    queue = f"no-worker-{uuid.uuid4().hex[:8]}"
    served = TemporalTasks(data_dir=data_dir, ui=False, task_queue=queue, run_worker=False)
    mcp = FastMCP("front-end")
    mcp.add_extension(served)

    @mcp.tool(task=True)
    async def confirm(ctx: Context) -> str:
        if not ctx.input_responses:
            return mcp_types.InputRequiredResult(  # type: ignore[return-value]
                input_requests={
                    "ok": mcp_types.ElicitRequest(
                        params=mcp_types.ElicitRequestFormParams(
                            message="OK?",
                            requested_schema={"type": "object", "properties": {}},
                        )
                    )
                }
            )
        return "confirmed"

    samples: list[float] = []
    query_samples: list[float] = []
    # A task asking a client that did not declare elicitation fails at once;
    # this one answers through tasks/update, so its handler is never called.
    async with Client(mcp, elicitation_handler=_never_called) as client:
        assert served.dev_server is not None
        temporal = await TemporalClient.connect(served.dev_server.address, namespace="default")
        tasks = [await call_tool_task(client, "confirm", {}) for _ in range(n)]
        async with Worker(temporal, task_queue=queue, plugins=[McpTasksPlugin(mcp)]):
            parked = [await task.wait(state="input_required", timeout=60) for task in tasks]
        for task, view in zip(tasks, parked, strict=True):  # the worker is gone
            (key,) = view.input_requests
            await _send_update(
                client.session, task.task_id, {key: {"action": "accept", "content": {}}}
            )
            before = time.perf_counter()
            read = await task.status()
            samples.append((time.perf_counter() - before) * 1000)
            if read.status != "working" or read.input_requests:
                raise RuntimeError(f"the answered key still shows: {read}")
        for task in tasks[:5]:  # what the read path used to do: ask the workflow
            handle = temporal.get_workflow_handle(workflow_id_for(task.task_id, None))
            before = time.perf_counter()
            with contextlib.suppress(Exception):
                await handle.query(VIEW_QUERY, rpc_timeout=timedelta(seconds=2))
            query_samples.append((time.perf_counter() - before) * 1000)
    return [
        "| read, no worker up, right after `tasks/update` | n | p50 (ms) | p99 (ms) "
        "| shows the key answered |",
        "|---|---|---|---|---|",
        f"| `tasks/get` (describe + the history's unapplied tail) | {len(samples)} "
        f"| {statistics.median(samples):.1f} | {pct(samples, 0.99):.1f} | yes, every read |",
        "| before: query to the workflow (2 s `query_timeout`), then the memo "
        f"| {len(query_samples)} | {statistics.median(query_samples):.0f} "
        f"| {pct(query_samples, 0.99):.0f} | no |",
    ]


async def main(
    n: int, rounds: int, reads: int, out: Path | None, tool_s: float, redis: bool
) -> None:
    """Write the tables to ``out`` (stdout carries the servers' access logs), or to stdout."""
    command = " ".join([".venv/bin/python", *sys.argv])
    load = os.getloadavg()[0]
    lines = ["## Completion latency: tool returns → client knows", ""]
    lines += await completion_latency(n, rounds, tool_s, redis)
    loads = f"{load:.1f} before, {os.getloadavg()[0]:.1f} after"
    lines[:0] = [
        f"Measured with `{command}` ({os.cpu_count()} cores, shared; 1-minute load "
        f"average {loads} the completion-latency part).",
        "",
    ]
    lines += ["", "## `tasks/get` with no worker, after `tasks/update`", ""]
    lines += await reads_without_worker(reads)
    text = "\n".join(lines) + "\n"
    if out is None:
        print(text)
    else:
        out.write_text(text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="tasks per completion-latency row")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--reads", type=int, default=100, help="no-worker reads after an update")
    parser.add_argument("--out", type=Path, default=Path("bench/results/time_to_result.md"))
    parser.add_argument("--tool-s", type=float, default=2.0, help="how long the tool runs")
    parser.add_argument(
        "--no-redis", action="store_true", help="leave out the peer on Redis (needs redis-server)"
    )
    args = parse_args(parser, n=1, rounds=1, reads=1, out=None, tool_s=0.2, no_redis=True)
    asyncio.run(main(args.n, args.rounds, args.reads, args.out, args.tool_s, not args.no_redis))
