"""Time to result: how soon after a tool returns its client knows, and reads with no worker.

    .venv/bin/python bench/time_to_result.py --n 40 --rounds 4 --out bench/results/time_to_result.md
    .venv/bin/python bench/time_to_result.py --n 10 --rounds 10 --reads 20 \
        --out bench/results/time_to_result_one_at_a_time.md

Part 1 -- completion latency. A ``crunch`` tool sleeps 2 s and records the
moment it returns; each client records the moment it learns the task is
``completed``. Both servers run in this process behind real streamable HTTP
(uvicorn on 127.0.0.1): fastmcp-temporal embedded (``TemporalTasks()``, its own
dev server, in-process worker) and the peer fastmcp-tasks 4.1.4 on a real
``redis-server`` with ``appendonly yes``. Clients:

(a) a spec client honouring ``pollIntervalMs``: ``tasks/get``, sleep the
    interval the last answer carried, repeat (raw JSON-RPC over one HTTP client);
(b) the FastMCP ``Client`` with ``fastmcp_tasks``' back-off (``ToolTask.result()``);
(c) a listening client: ``subscriptions/listen`` with the task id right after
    ``tools/call``, done at the first ``notifications/tasks`` saying
    ``completed`` (fastmcp-temporal only: the peer answers ``-32601``).

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
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import fastmcp_tasks  # noqa: F401  (the client half of the tasks extension)
import httpx
import mcp_types
from compare import redis_server
from fastmcp import Client, Context, FastMCP
from fastmcp.utilities.tests import run_server_async
from fastmcp_tasks import TasksExtension, call_tool_task
from fastmcp_tasks.client import _send_update
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import McpTasksPlugin, TemporalTasks
from fastmcp_temporal.server.engine import workflow_id_for
from fastmcp_temporal.workflows.models import VIEW_QUERY

TOOL_SECONDS = 2.0
PROTOCOL = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
OURS, PEER = "fastmcp-temporal", "fastmcp-tasks on Redis"
POLLING = "client honouring pollIntervalMs"
FASTMCP = "FastMCP client (fastmcp_tasks back-off)"
#: When each crunch call returned (wall clock), by its token.
FINISHED: dict[str, float] = {}


def crunch_server(extension: Any) -> FastMCP:
    mcp = FastMCP("bench")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def crunch(token: str) -> str:
        await asyncio.sleep(TOOL_SECONDS)
        FINISHED[token] = time.time()
        return token

    return mcp


class Wire:
    """Raw 2026-07-28 JSON-RPC over one HTTP client: what a spec-following client sends."""

    def __init__(self, url: str, http: httpx.AsyncClient) -> None:
        self.url, self.http, self.ids = url, http, itertools.count(1)

    def _request(
        self, method: str, params: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, str]]:
        params = dict(params)
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL,
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        }
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
            "Mcp-Method": method,
        }
        name = params.get("taskId", params.get("name"))
        if isinstance(name, str):
            headers["Mcp-Name"] = name
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        return body, headers

    async def result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body, headers = self._request(method, params)
        response = await self.http.post(self.url, json=body, headers=headers)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            lines = [line for line in response.text.splitlines() if line.startswith("data:")]
            message = json.loads(lines[-1][5:])
        else:
            message = response.json()
        if "result" not in message:
            raise RuntimeError(f"{method}: {message}")
        return message["result"]

    @contextlib.asynccontextmanager
    async def listen(self, task_id: str) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        body, headers = self._request(
            "subscriptions/listen", {"notifications": {"taskIds": [task_id]}}
        )
        async with self.http.stream("POST", self.url, json=body, headers=headers) as response:

            async def frames() -> AsyncIterator[dict[str, Any]]:
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        yield json.loads(line[5:])

            yield frames()


Client_ = Callable[[str], Awaitable[float]]  # token -> when the client learned "completed"


def polling_client(wire: Wire) -> Client_:
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


def listening_client(wire: Wire) -> Client_:
    async def run(token: str) -> float:
        task = await wire.result("tools/call", {"name": "crunch", "arguments": {"token": token}})
        async with wire.listen(task["taskId"]) as frames:
            async for frame in frames:
                method, params = frame.get("method"), frame.get("params", {})
                if method == "notifications/tasks" and params["status"] == "completed":
                    return time.time()
        raise RuntimeError("listen stream ended before completion")

    return run


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def completion_latency(n: int, rounds: int) -> list[str]:
    async with contextlib.AsyncExitStack() as stack:
        data_dir = Path(tempfile.mkdtemp(prefix="bench-ttr-"))
        ours_url = await stack.enter_async_context(
            run_server_async(crunch_server(TemporalTasks(data_dir=data_dir, ui=False)))
        )
        redis_url, _ = await stack.enter_async_context(redis_server(appendonly=True))
        peer_url = await stack.enter_async_context(
            run_server_async(crunch_server(TasksExtension(url=redis_url)))
        )
        # Idle connections are dropped before uvicorn's 5 s keep-alive closes
        # them under a request (a client sleeping a 5 s interval would race it).
        limits = httpx.Limits(keepalive_expiry=1.0)
        http = await stack.enter_async_context(
            httpx.AsyncClient(timeout=httpx.Timeout(60, read=None), limits=limits)
        )
        ours_client = await stack.enter_async_context(Client(ours_url))
        peer_client = await stack.enter_async_context(Client(peer_url))
        rows: dict[str, Client_] = {
            "fastmcp-temporal, (a) client honouring pollIntervalMs": polling_client(
                Wire(ours_url, http)
            ),
            "fastmcp-temporal, (b) FastMCP client (fastmcp_tasks back-off)": fastmcp_client(
                ours_client
            ),
            "fastmcp-temporal, (c) listening client (subscriptions/listen)": listening_client(
                Wire(ours_url, http)
            ),
            "fastmcp-tasks on Redis, (a) client honouring pollIntervalMs": polling_client(
                Wire(peer_url, http)
            ),
            "fastmcp-tasks on Redis, (b) FastMCP client (fastmcp_tasks back-off)": fastmcp_client(
                peer_client
            ),
        }
        for run in rows.values():  # warm up: pollers, caches, connections
            await run(f"warm-{uuid.uuid4().hex}")
        late: dict[str, list[float]] = {name: [] for name in rows}
        total: dict[str, list[float]] = {name: [] for name in rows}
        per_round = max(1, n // rounds)
        for _ in range(rounds):
            for name, run in rows.items():

                async def one(run: Client_ = run, name: str = name) -> None:
                    token = uuid.uuid4().hex
                    started = time.time()
                    learned = await run(token)
                    late[name].append((learned - FINISHED[token]) * 1000)
                    total[name].append((learned - started) * 1000)

                await asyncio.gather(*(one() for _ in range(per_round)))
    lines = [
        f"Tool runs {TOOL_SECONDS:.0f} s; {per_round * rounds} tasks per row, "
        f"{per_round} at a time, {rounds} interleaved rounds.",
        "",
        "| system, client | tool returned → client knows p50 / p99 (ms) "
        "| call → client knows p50 / p99 (ms) |",
        "|---|---|---|",
    ]
    for name in rows:
        lines.append(
            f"| {name} | {pct(late[name], 0.5):.0f} / {pct(late[name], 0.99):.0f} "
            f"| {pct(total[name], 0.5):.0f} / {pct(total[name], 0.99):.0f} |"
        )
    return lines


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
    async with Client(mcp) as client:
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


async def main(n: int, rounds: int, reads: int, out: Path) -> None:
    """Write the tables to ``out`` (stdout carries the servers' access logs)."""
    lines = ["## Completion latency: tool returns → client knows", ""]
    lines += await completion_latency(n, rounds)
    lines += ["", "## `tasks/get` with no worker, after `tasks/update`", ""]
    lines += await reads_without_worker(reads)
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="tasks per completion-latency row")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--reads", type=int, default=100, help="no-worker reads after an update")
    parser.add_argument("--out", type=Path, default=Path("bench/results/time_to_result.md"))
    args = parser.parse_args()
    asyncio.run(main(args.n, args.rounds, args.reads, args.out))
