"""``fastmcp-temporal tasks list|show|cancel``: operating tasks over Temporal visibility.

    fastmcp-temporal tasks list --tool crunch --status input_required
    fastmcp-temporal tasks show <taskId or workflow id>    # what tasks/get returns, as JSON
    fastmcp-temporal tasks cancel <taskId or workflow id>

MCP has no ``tasks/list`` on the wire (tasks belong to their callers), but an
operator needs one: Temporal's visibility store already indexes every task, by
workflow type and -- where they are registered -- by ``McpToolName`` and
``McpTaskStatus``. ``show`` answers exactly what ``tasks/get`` answers (the same
engine, the same code path), for any caller's task: operators are not scoped.

A bare task id is looked up as an anonymous task first, then by scanning the
newest tasks (``--scan``), since the caller's scope tag in the workflow id is
keyed (``scope``); ``tasks list`` prints workflow ids, which always work.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import re
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from mcp.shared.exceptions import MCPError
from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus
from temporalio.service import RPCError

from fastmcp_temporal.server.core import visibility
from fastmcp_temporal.server.core.codec import task_data_converter
from fastmcp_temporal.server.core.settings import load_settings
from fastmcp_temporal.server.core.temporal_errors import workflow_not_found
from fastmcp_temporal.server.payloads import payload_store
from fastmcp_temporal.server.payloads.payload_store import PayloadStoreSettings
from fastmcp_temporal.server.tasks.engine import TaskEngine, workflow_id_for
from fastmcp_temporal.server.temporal import connection
from fastmcp_temporal.server.temporal.connection import exit_now
from fastmcp_temporal.workflows.models import (
    TASK_STATUS_ATTRIBUTE,
    TOOL_NAME_ATTRIBUTE,
    WORKFLOW_TYPE_PREFIX,
    LegPolicy,
)

_CLOSED_STATUS = {
    WorkflowExecutionStatus.COMPLETED: "completed",
    WorkflowExecutionStatus.CANCELED: "cancelled",
}


def task_id_of(workflow_id: str) -> str:
    """``mcp-<scope tag>-<taskId>`` -> ``taskId``."""
    parts = workflow_id.split("-", 2)
    return parts[2] if len(parts) == 3 and parts[0] == "mcp" else workflow_id


def row(execution: WorkflowExecution) -> dict[str, Any]:
    """One task as ``tasks list`` shows it (search attributes, else the workflow's own)."""
    attributes = execution.typed_search_attributes
    tool = attributes.get(TOOL_NAME_ATTRIBUTE)
    if tool is None and execution.workflow_type.startswith(WORKFLOW_TYPE_PREFIX):
        tool = execution.workflow_type[len(WORKFLOW_TYPE_PREFIX) :]
    status = attributes.get(TASK_STATUS_ATTRIBUTE)
    if status is None and execution.status is not None:
        running = execution.status == WorkflowExecutionStatus.RUNNING
        status = "working" if running else _CLOSED_STATUS.get(execution.status, "failed")
    return {
        "taskId": task_id_of(execution.id),
        "tool": tool or "?",
        "status": status or "?",
        "startedAt": execution.start_time.isoformat().replace("+00:00", "Z"),
        "workflowId": execution.id,
        "taskQueue": execution.task_queue,
    }


async def list_tasks(
    client: Client,
    *,
    tool: str | None = None,
    status: str | None = None,
    task_queue: str | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """The newest tasks matching the filters (without search attributes: see ``list_query``)."""
    registered = await has_search_attributes(client)
    query = visibility.list_query(
        tool=tool, status=status, task_queue=task_queue, search_attributes=registered
    )
    rows = [row(execution) async for execution in client.list_workflows(query, limit=limit)]
    if not registered and status in ("working", "input_required"):
        rows = [r for r in rows if r["status"] == status]  # best effort: both are Running
    return rows


async def has_search_attributes(client: Client) -> bool:
    """Whether ``McpToolName``/``McpTaskStatus`` are registered (one operator RPC)."""
    from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest

    try:
        response = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
    except RPCError:
        return True  # no permission to ask (e.g. Temporal Cloud): assume a configured namespace
    return all(key.name in response.custom_attributes for key in visibility.SEARCH_ATTRIBUTES)


async def resolve_workflow_id(client: Client, task: str, *, scan: int = 10_000) -> str | None:
    """A workflow id for ``task`` (a workflow id, or a task id of any scope)."""
    candidates = [task] if task.startswith("mcp-") else []
    candidates.append(workflow_id_for(task, None))
    for candidate in candidates:
        try:
            await client.get_workflow_handle(candidate).describe()
            return candidate
        except RPCError as err:
            if not workflow_not_found(err):
                raise
    suffix = f"-{task}"
    query = visibility.list_query()
    async for execution in client.list_workflows(query, limit=scan):
        if execution.id.endswith(suffix):
            return execution.id
    return None


class _OperatorEngine(TaskEngine):
    """The ``tasks/get`` engine for one workflow id: operators are not scoped."""

    def __init__(self, client: Client, workflow_id: str) -> None:
        super().__init__(
            client,
            task_queue="",
            ttl_ms=1,
            query_timeout=timedelta(seconds=5),
            leg_policy=LegPolicy(),
            max_rounds=1,
        )
        self._workflow_id = workflow_id

    def workflow_ids(self, task_id: str, scope: str | None) -> Sequence[str]:
        return [self._workflow_id]


async def show_task(client: Client, workflow_id: str) -> dict[str, Any]:
    """What ``tasks/get`` returns for it; past its TTL, Temporal's status instead."""
    try:
        result = await _OperatorEngine(client, workflow_id).get(task_id_of(workflow_id), None)
    except MCPError:  # past its TTL: gone for clients, still in Temporal until retention
        description = await client.get_workflow_handle(workflow_id).describe()
        return {
            "taskId": task_id_of(workflow_id),
            "expired": True,
            "temporalStatus": description.status.name if description.status else None,
            "closedAt": description.close_time.isoformat() if description.close_time else None,
        }
    return result.model_dump(by_alias=True, exclude_none=True)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tasks list|show|cancel`` to the ``fastmcp-temporal`` command."""
    tasks = commands.add_parser("tasks", help="list, show and cancel MCP tasks (operators)")
    actions = tasks.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="the newest tasks, filtered")
    listing.add_argument("--tool")
    listing.add_argument("--status", choices=visibility.TASK_STATUSES)
    listing.add_argument("--task-queue")
    listing.add_argument("--limit", type=int, default=50)
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    show = actions.add_parser("show", help="the detailed task, as tasks/get returns it")
    cancel = actions.add_parser("cancel", help="cancel a task (tasks/cancel)")
    for parser in (show, cancel):
        parser.add_argument("task", help="task id or workflow id")
        parser.add_argument("--scan", type=int, default=10_000, help="newest tasks to search")
    for parser in (listing, show, cancel):
        connection.add_arguments(parser)
        payload_store.add_argument(parser)
        parser.set_defaults(handler=_run)


#: A task id (or workflow id) that begins with ``-``: ids minted before ``mint_task_id``
#: avoided a leading dash. Sixteen characters or more, so never one of our option names.
_DASHED_ID = re.compile(r"^-[A-Za-z0-9_-]{15,}$")


def dashed_task_id_last(argv: Sequence[str]) -> list[str]:
    """Let ``tasks show|cancel`` take a task id that starts with ``-``.

    argparse reads ``-T8wB…`` as an unknown option and then misses its positional; moving such
    a token behind ``--`` keeps every real option where the operator typed it.
    """
    args = list(argv)
    if args[:1] != ["tasks"] or len(args) < 2 or args[1] not in ("show", "cancel"):
        return args
    dashed = [arg for arg in args[2:] if _DASHED_ID.match(arg)]
    if len(dashed) != 1 or "--" in args:
        return args
    args.remove(dashed[0])
    return [*args, "--", dashed[0]]


def _run(args: argparse.Namespace) -> int:
    return exit_now(asyncio.run(_main(args)))


async def _main(args: argparse.Namespace) -> int:
    async with contextlib.AsyncExitStack() as stack:
        payloads = PayloadStoreSettings.resolve(
            args.payload_store, data_dir=Path(args.data_dir or load_settings().data_dir)
        )
        storage = await payloads.open(stack)
        client, _ = await connection.connect_or_join(
            stack,
            connection.resolve(**connection.overrides_from(args)),
            data_dir=args.data_dir,
            start=False,
            data_converter=task_data_converter(payload_storage=storage),
        )
        try:
            return await _act(client, args)
        finally:
            del client
            gc.collect()  # drop the Temporal client before exit (temporalio/sdk-python#300)


async def _act(client: Client, args: argparse.Namespace) -> int:
    if args.action == "list":
        rows = await list_tasks(
            client, tool=args.tool, status=args.status, task_queue=args.task_queue, limit=args.limit
        )
        _print_rows(rows, as_json=args.json)
        return 0
    workflow_id = await resolve_workflow_id(client, args.task, scan=args.scan)
    if workflow_id is None:
        print(f"Task {args.task!r} not found", file=sys.stderr)
        return 1
    if args.action == "show":
        print(json.dumps(await show_task(client, workflow_id), indent=2, ensure_ascii=False))
        return 0
    return await cancel_task(client, workflow_id)


async def cancel_task(client: Client, workflow_id: str) -> int:
    """Request cancellation of a running task; a finished one is reported, exit status 1.

    An operator who cancels a task that already ended must not read
    "cancellation requested": nothing will happen, and how it ended matters.
    """
    handle = client.get_workflow_handle(workflow_id)
    status = (await handle.describe()).status
    if status == WorkflowExecutionStatus.RUNNING:
        try:
            await handle.cancel()
        except RPCError as err:
            if not workflow_not_found(err):
                raise
            status = (await handle.describe()).status  # it ended meanwhile
        else:
            print(f"cancellation requested: {workflow_id}")
            return 0
    ended = _CLOSED_STATUS.get(status, "failed") if status is not None else "finished"
    task_id = task_id_of(workflow_id)
    print(f"Task {task_id!r} already finished ({ended}): not cancelled", file=sys.stderr)
    return 1


def _print_rows(rows: list[dict[str, Any]], *, as_json: bool) -> None:
    if as_json:
        for item in rows:
            print(json.dumps(item, ensure_ascii=False))
        return
    columns = ("taskId", "tool", "status", "startedAt", "workflowId")
    widths = {c: max([len(c), *(len(str(r[c])) for r in rows)]) for c in columns}
    print("  ".join(c.upper().ljust(widths[c]) for c in columns).rstrip())
    for item in rows:
        print("  ".join(str(item[c]).ljust(widths[c]) for c in columns).rstrip())
