"""Tasks left on the embedded default's previous task queue still finish.

The embedded default used to run every server's tasks on ``mcp-tasks``; it now
runs them on ``mcp-tasks-<server name>``, so two servers started from one
folder never take each other's legs. A data directory upgraded with tasks in
flight (parked for input, or running) still has them on ``mcp-tasks``, where
nobody polls any more: they would sit there until their TTL.

So at start-up a process that runs a worker on the embedded server asks
visibility once -- one count of open ``McpTask*`` workflows on ``mcp-tasks``
whose tool this server serves -- and, if there are any, also runs a worker on
that queue. It counts again every ``RECHECK_S`` seconds and stops that worker
once none are left: after the upgrade's last task the process is back to one
worker, and a data directory without such tasks costs the count alone.

Two servers sharing the data directory each count only their own tools, so a
server with none of them left never polls the old queue. When both have tasks
there, both poll it and a leg may reach the worker of the other server: that
attempt fails as ``UnknownTool`` and the leg is retried (1 s, 2 s, 4 s ... up to
``LegPolicy.max_retry_interval_s``) until a worker serving it takes it; the task
itself does not fail (legs retry until its TTL, see ``workflows.leg_retry``).

A *renamed* server (``mcp-tasks-alpha`` -> ``mcp-tasks-beta``) leaves its open
tasks on its old queue too, but here the process cannot tell a rename from
another server of this folder that is merely stopped and has a tool of the
same name -- running that server's tasks with this server's tool would be
wrong. So it does not adopt them; it looks once at start-up
(``unpolled_queues``: open tasks of its tools on other ``mcp-tasks-*`` queues
that no live process polls) and logs, per such queue, how many wait there and
the one command that finishes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Callable, Collection
from pathlib import Path

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import PollerInfo, TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError
from temporalio.worker import Worker

from fastmcp_temporal.server.core.visibility import list_query, quoted, workflow_type
from fastmcp_temporal.workflows.models import TOOL_NAME_ATTRIBUTE

logger = logging.getLogger(__name__)

#: The embedded default's queue before it was named after the server.
PREVIOUS_EMBEDDED_QUEUE = "mcp-tasks"
#: How often the old queue's worker asks whether its tasks are all done.
RECHECK_S = 30.0
#: A poller on another host counts as live if it polled this recently (a live
#: worker's long poll is renewed at least every minute).
LIVE_POLLER_S = 90.0
#: How many other queues the start-up look reports at most.
MAX_OTHER_QUEUES = 20


def _tasks_of(tools: Collection[str]) -> str:
    names = ", ".join(quoted(name) for name in sorted(tools))
    types = ", ".join(quoted(workflow_type(name)) for name in sorted(tools))
    return (
        f"ExecutionStatus = 'Running' AND "
        f"({TOOL_NAME_ATTRIBUTE.name} IN ({names}) OR WorkflowType IN ({types}))"
    )


def open_tasks_query(queue: str, tools: Collection[str]) -> str:
    """Open tasks on ``queue`` of ``tools`` (by search attribute, or by workflow type)."""
    return f"{list_query(task_queue=queue)} AND {_tasks_of(tools)}"


async def count_open_tasks(client: Client, queue: str, tools: Collection[str]) -> int:
    if not tools:
        return 0
    return (await client.count_workflows(open_tasks_query(queue, tools))).count


@contextlib.asynccontextmanager
async def serving_previous_queue(
    client: Client,
    tools: Collection[str],
    new_worker: Callable[[str], Worker],
    *,
    queue: str = PREVIOUS_EMBEDDED_QUEUE,
) -> AsyncIterator[None]:
    """While inside: a worker (``new_worker(queue)``) on ``queue`` as long as it has our tasks."""
    try:
        waiting = await count_open_tasks(client, queue, tools)
    except RPCError as err:  # serving new tasks matters more than finding old ones
        logger.warning(
            "fastmcp-temporal: could not count tasks on task queue %r (%s): tasks started "
            "there before the upgrade are not served by this process",
            queue,
            err,
        )
        waiting = 0
    if not waiting:
        yield
        return
    logger.warning(
        "fastmcp-temporal: %d task(s) started before the upgrade wait on task queue %r; "
        "serving it too until they finish",
        waiting,
        queue,
    )
    stopping = asyncio.Event()
    drain = asyncio.create_task(_serve_until_done(client, queue, tools, new_worker, stopping))
    try:
        yield
    finally:
        stopping.set()
        await drain


async def _serve_until_done(
    client: Client,
    queue: str,
    tools: Collection[str],
    new_worker: Callable[[str], Worker],
    stopping: asyncio.Event,
) -> None:
    async with new_worker(queue):
        while not stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), RECHECK_S)
            if stopping.is_set():
                return
            try:
                left = await count_open_tasks(client, queue, tools)
            except RPCError as err:  # visibility hiccup: keep serving, ask again later
                logger.warning("fastmcp-temporal: could not count tasks on %r: %s", queue, err)
                continue
            if not left:
                logger.warning(
                    "fastmcp-temporal: no tasks left on task queue %r; stopping its worker", queue
                )
                return


def _on_other_queues_query(known: Collection[str], tools: Collection[str]) -> str:
    others = " AND ".join(f"TaskQueue != {quoted(queue)}" for queue in sorted(known))
    return (
        f"{list_query()} AND TaskQueue STARTS_WITH {quoted(PREVIOUS_EMBEDDED_QUEUE + '-')} "
        f"AND {others} AND {_tasks_of(tools)}"
    )


def _is_live(poller: PollerInfo, now: float) -> bool:
    """A process that polled recently and, if it ran on this host, still exists."""
    if now - poller.last_access_time.seconds > LIVE_POLLER_S:
        return False
    pid, _, host = poller.identity.partition("@")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    return True


async def _polled(client: Client, queue: str) -> bool:
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    response = await client.workflow_service.describe_task_queue(request, retry=True)
    now = time.time()
    return any(_is_live(poller, now) for poller in response.pollers)


async def unpolled_queues(client: Client, own_queue: str, tools: Collection[str]) -> dict[str, int]:
    """Open tasks of ``tools`` per other ``mcp-tasks-*`` queue that no live process polls.

    One queue at a time: the first open task on a queue not seen yet names it,
    then one count. A folder with no such tasks costs one visibility call.
    """
    waiting: dict[str, int] = {}
    if not tools:
        return waiting
    seen = {own_queue}
    while len(seen) <= MAX_OTHER_QUEUES:
        query = _on_other_queues_query(seen, tools)
        executions = client.list_workflows(query, limit=1, page_size=1)
        found = [execution.task_queue async for execution in executions]
        if not found:
            break
        queue = found[0]
        seen.add(queue)
        waiting[queue] = await count_open_tasks(client, queue, tools)
    for queue in list(waiting):
        if await _polled(client, queue):
            del waiting[queue]
    return waiting


async def report_unpolled_queues(
    client: Client, own_queue: str, tools: Collection[str], data_dir: Path
) -> None:
    """Log, per queue left by a renamed server, its waiting tasks and the command to finish them."""
    try:
        waiting = await unpolled_queues(client, own_queue, tools)
    except RPCError as err:  # a diagnosis must never stop the server
        logger.warning("fastmcp-temporal: could not look for tasks on other queues: %s", err)
        return
    for queue, count in sorted(waiting.items()):
        logger.warning(
            "fastmcp-temporal: %d open task(s) of this server's tools wait on task queue %r, "
            "which no process polls (was this server called %r before?). To finish them, run "
            "`fastmcp-temporal worker --task-queue %s --data-dir %s <server.py>` until they are "
            "done; otherwise they fail at the end of their TTL",
            count,
            queue,
            queue.removeprefix(PREVIOUS_EMBEDDED_QUEUE + "-"),
            queue,
            data_dir,
        )
