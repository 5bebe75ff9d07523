"""Where a durable synchronous call's time goes: phases and Temporal RPCs of one call.

    .venv/bin/python bench/sync_breakdown.py --n 60
    .venv/bin/python bench/sync_breakdown.py --n 60 --tool default --progress

A ``task=True`` short tool (local legs; ``--tool default``: a plain ``task=True``
tool, whose legs are regular activities) on the embedded default (eager start,
in-process worker), called over streamable HTTP by a raw 2026-07-28 client
that does not declare the tasks extension, one call at a time. Each phase of
``sync_calls.call_durably`` is timed by wrapping the function that does it, and
every Temporal RPC the front end sends (the worker's own polls go through the
Rust core and are not counted) is counted by name. p50 per call, in ms. The
last call's history is then counted (events, workflow tasks, billable actions)
beside the raw minimum of the same shape: plain temporalio, eager start, the
same kind of leg, ``result()``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import temporalio.service as service
from fastmcp import FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp.utilities.tests import run_server_async
from support.mcp_http import McpHttp
from support.raw_engine import EchoWorkflow, echo_activity
from support.sandbox_toggle import task_workflows_sandboxed
from support.smoke import parse_args
from support.sync_before import patch_level_zero
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from fastmcp_temporal import TemporalTasks, ToolOptions
from fastmcp_temporal.server.protocol import call_waits, creation, sync_calls
from fastmcp_temporal.server.tasks import engine as engine_module
from fastmcp_temporal.server.tasks import quota, starter, task_watch

#: Per call: phase name -> seconds spent (summed when a phase repeats).
phases: dict[str, float] = defaultdict(float)
rpcs: Counter[str] = Counter()
calls: list[tuple[dict[str, float], Counter[str], float]] = []
#: The workflow ids the front end started, in order.
started: list[str] = []


@dataclass(frozen=True)
class Shape:
    """A tool shape, and the raw temporalio workflow that does the least it must.

    The raw comparator runs the same kind of leg (a local activity, or a regular
    one), so the cost table's difference is what the task workflow adds, not
    what the kind of leg costs.
    """

    #: The tool's name (as in ``bench/compare.py``).
    tool: str
    #: FastMCP's ``timeout``: 10 s declares the tool short, whose legs are local by default.
    timeout: float | None
    label: str
    #: ``EchoWorkflow``'s ``local`` argument.
    local: bool
    raw_label: str


SHAPES: dict[str, Shape] = {
    "short": Shape(
        "echo_plain_short",
        10,
        "durable sync call, short tool (local legs)",
        True,
        "raw eager start + local activity + `result()`",
    ),
    "default": Shape(
        "echo_plain",
        None,
        "durable sync call, default tool (activity legs)",
        False,
        "raw eager start + activity + `result()`",
    ),
}


def timed(owner: Any, name: str, label: str) -> None:
    original = getattr(owner, name)

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return await original(*args, **kwargs)
        finally:
            phases[label] += time.perf_counter() - began

    setattr(owner, name, wrapper)


def timed_gen(owner: Any, name: str, label: str) -> None:
    """An async generator: the time until each item, summed (the consumer's time excluded)."""
    original = getattr(owner, name)

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        iterator = original(*args, **kwargs)
        try:
            while True:
                began = time.perf_counter()
                try:
                    item = await iterator.__anext__()
                except StopAsyncIteration:
                    phases[label] += time.perf_counter() - began
                    return
                phases[label] += time.perf_counter() - began
                yield item
        finally:
            await iterator.aclose()

    setattr(owner, name, wrapper)


def instrument() -> None:
    original_rpc = service._BridgeServiceClient._rpc_call

    async def rpc_call(self: Any, rpc: str, *args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return await original_rpc(self, rpc, *args, **kwargs)
        finally:
            rpcs[rpc] += 1
            phases[f"rpc {rpc}"] += time.perf_counter() - began

    service._BridgeServiceClient._rpc_call = rpc_call  # type: ignore[method-assign]
    timed(sync_calls, "call_durably", "call_durably (all)")
    timed(sync_calls, "registered_component", "  registered_component + live check")
    timed(sync_calls, "undelivered_task", "  undelivered_task (the attach lookup)")
    timed(sync_calls, "create_task", "  create_task")
    timed(creation, "start_guarded", "    start_guarded")
    timed(quota.CallerQuota, "admit", "      quota.admit")
    timed(engine_module.TaskEngine, "start", "      engine.start")
    original_start = starter.WorkflowStarter.start

    async def start(self: Any, *args: Any, **kwargs: Any) -> Any:
        started.append(kwargs["id"])
        return await original_start(self, *args, **kwargs)

    starter.WorkflowStarter.start = start  # type: ignore[method-assign]
    timed(starter.WorkflowStarter, "start", "        starter.start (StartWorkflowExecution)")
    timed(sync_calls, "_waited", "  _waited")
    timed(engine_module.TaskEngine, "read", "    engine.read (tasks/get read)")
    timed(call_waits, "ended", "    ended (the close event's long poll)")
    timed(task_watch, "_completed_view", "      _completed_view (decode)")
    timed(sync_calls, "_answer", "  _answer")


def costs(events: list[Any], queries: int) -> tuple[str, int, int, Counter[str]]:
    """What one workflow's history costs: events by type, workflow tasks, billable actions.

    Actions as Temporal Cloud lists them: the start, each activity, each local
    activity (a ``core_local_activity`` marker), timers, search-attribute
    upserts other than ``TemporalChangeVersion`` alone, signals, queries.
    Memo upserts (``WORKFLOW_PROPERTIES_MODIFIED``) are shown apart: not in that list.
    """
    by_type: Counter[str] = Counter(
        EventType.Name(event.event_type).removeprefix("EVENT_TYPE_").lower() for event in events
    )
    actions: Counter[str] = Counter(queries=queries)
    for event in events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            actions["start"] += 1
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            actions["activity"] += 1
        elif kind == EventType.EVENT_TYPE_MARKER_RECORDED:
            name = event.marker_recorded_event_attributes.marker_name
            actions["local activity" if name == "core_local_activity" else f"marker {name}"] += 1
        elif kind == EventType.EVENT_TYPE_TIMER_STARTED:
            actions["timer"] += 1
        elif kind == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            fields = event.upsert_workflow_search_attributes_event_attributes.search_attributes
            if set(fields.indexed_fields) - {"TemporalChangeVersion"}:
                actions["search-attribute upsert"] += 1
            else:
                actions["TemporalChangeVersion upsert (not billed)"] += 1
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            actions["signal"] += 1
        elif kind == EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
            actions["memo upsert (not in the list)"] += 1
    billable = sum(
        count
        for name, count in actions.items()
        if name
        in {
            "start",
            "activity",
            "local activity",
            "timer",
            "search-attribute upsert",
            "signal",
            "queries",
        }
    )
    described = ", ".join(f"{count} {name}" for name, count in sorted(by_type.items()))
    return described, by_type["workflow_task_completed"], billable, actions


async def raw_history(address: str, local: bool) -> list[Any]:
    """One raw eager start + (local) activity + ``result()``: the minimum, for comparison."""
    raw = await TemporalClient.connect(address)
    async with Worker(
        raw,
        task_queue="raw-cost",
        workflows=[EchoWorkflow],
        activities=[echo_activity],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        handle = await raw.start_workflow(
            EchoWorkflow.run,
            args=["x", local],
            id=f"raw-cost-{time.time_ns()}",
            task_queue="raw-cost",
            request_eager_start=True,
        )
        await handle.result()
        return [event async for event in handle.fetch_history_events()]


async def main(
    n: int, progress: bool, level_zero: bool, sandboxed: bool, shape: Shape, attach: bool
) -> None:
    instrument()
    async with AsyncExitStack() as stack:
        if sandboxed:
            stack.enter_context(task_workflows_sandboxed())
        if level_zero:
            stack.enter_context(patch_level_zero())
        data_dir = tempfile.mkdtemp(prefix="bench-sync-breakdown-")
        mcp = FastMCP("sync-breakdown")
        # ``--no-attach``: the tool opts out of attaching repeats, so no call looks a record up.
        tools = {} if attach else {shape.tool: ToolOptions(attach_repeats=False)}
        extension = TemporalTasks(data_dir=data_dir, ui=False, tools=tools)
        mcp.add_extension(extension)

        async def echo(text: str) -> str:
            return text

        # Only the measured tool is registered: the SDK lists the tools on every call.
        mcp.tool(
            echo,
            name=shape.tool,
            task=TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=20)),
            timeout=shape.timeout,
        )

        url = await stack.enter_async_context(run_server_async(mcp))
        logging.getLogger("uvicorn.access").disabled = True
        http = await stack.enter_async_context(
            httpx.AsyncClient(timeout=httpx.Timeout(60, read=None))
        )
        wire = McpHttp(url, http)
        cpu_began = 0.0
        for i in range(n + 10):
            if i == 10:
                cpu_began = time.process_time()
            phases.clear()
            rpcs.clear()
            began = time.perf_counter()
            await wire.result(
                "tools/call",
                {"name": shape.tool, "arguments": {"text": str(i)}},
                declare_tasks=False,
                meta={"progressToken": f"p{i}"} if progress else None,
            )
            total = time.perf_counter() - began
            if i >= 10:  # warm-up calls are not measured
                calls.append((dict(phases), Counter(rpcs), total))
        cpu_per_call = (time.process_time() - cpu_began) / n
        assert extension.dev_server is not None
        address = extension.dev_server.address
        ours_client = await TemporalClient.connect(address)
        ours = [
            e async for e in ours_client.get_workflow_handle(started[-1]).fetch_history_events()
        ]
        raw = await raw_history(address, shape.local)

    names: list[str] = []
    for measured, _, _ in calls:
        names += [name for name in measured if name not in names]
    token = (
        (", the default tool (activity legs)" if not shape.local else "")
        + (", each with a progressToken" if progress else "")
        + (", at patch level 0 (every patch marker, as before)" if level_zero else "")
        + (", the task workflow sandboxed (as before)" if sandboxed else "")
        + (", the tool opted out of attaching (no lookup, as before)" if not attach else "")
    )
    print(f"n = {n} calls{token}, one at a time, after 10 warm-up calls; p50 per call in ms\n")
    print("| phase | p50 ms | mean ms |")
    print("|---|---|---|")
    totals = [total for _, _, total in calls]
    print(
        f"| HTTP client, end to end | {statistics.median(totals) * 1000:.2f} | "
        f"{statistics.mean(totals) * 1000:.2f} |"
    )
    for name in names:
        values = [measured.get(name, 0.0) for measured, _, _ in calls]
        print(
            f"| {name} | {statistics.median(values) * 1000:.2f} | "
            f"{statistics.mean(values) * 1000:.2f} |"
        )
    print(
        f"| CPU of this process (client, server, worker: every thread), per call | "
        f"{cpu_per_call * 1000:.2f} (mean) | |"
    )
    print("\n| Temporal RPC from the front end | per call (mean) |")
    print("|---|---|")
    every: Counter[str] = Counter()
    for _, counted, _ in calls:
        every.update(counted)
    for name, count in every.most_common():
        print(f"| {name} | {count / len(calls):.2f} |")
    queries = round(every["query_workflow"] / len(calls))
    print("\n| one call | history events | workflow tasks | billable actions |")
    print("|---|---|---|---|")
    for label, events, asked in ((shape.label, ours, queries), (shape.raw_label, raw, 0)):
        described, tasks, billable, actions = costs(events, asked)
        listed = ", ".join(f"{count} {name}" for name, count in actions.items() if count)
        print(f"| {label} | {len(events)} ({described}) | {tasks} | {billable} ({listed}) |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument(
        "--progress", action="store_true", help="each call carries a progressToken (as hosts send)"
    )
    parser.add_argument(
        "--patch-level-zero",
        action="store_true",
        help="new tasks at patch level 0: every patch marker, as before workflows/patches.py",
    )
    parser.add_argument(
        "--sandboxed", action="store_true", help="the task workflow in the sandbox, as before"
    )
    parser.add_argument(
        "--tool",
        choices=sorted(SHAPES),
        default="short",
        help="short: local legs (timeout=10); default: a plain task=True tool, activity legs",
    )
    parser.add_argument(
        "--no-attach",
        action="store_true",
        help="the tool opts out of attaching repeated calls: no lookup of an undelivered task",
    )
    args = parse_args(parser, n=2)
    attach = not args.no_attach
    shape = SHAPES[args.tool]
    asyncio.run(main(args.n, args.progress, args.patch_level_zero, args.sandboxed, shape, attach))
