"""``subscriptions/listen`` for tasks: status pushed as ``notifications/tasks`` (SEP-2663 R43-R46).

A client names the tasks it wants to follow in ``params.notifications.taskIds``.
The first frame, ``notifications/subscriptions/acknowledged``, lists the ids it
may watch: its own scope's tasks that still exist. Another caller's id is left
out exactly like an unknown one (``tasks/get`` cannot tell them apart either).
Then every change of an acknowledged task -- status, ``statusMessage``, input
requests, the final result or error -- arrives as ``notifications/tasks`` whose
params are the task as ``tasks/get`` would return it at that moment (without
``resultType``, it is a notification), each stamped with
``_meta["io.modelcontextprotocol/subscriptionId"]`` = the listen request's id.
No ``notifications/progress`` or ``notifications/message`` is sent here (R46).

Each task is followed by ``task_watch.watch``: a long poll on its workflow's
history, so the front end holding the stream learns of changes made by any
worker, an idle (parked) task costs one pending RPC and no reads, a wake reads
only when its events can change the task (the completion carries the final
task itself), and progress messages of a running leg are re-read at the task's
own ``pollIntervalMs``, at most once a second (the heartbeat throttle).
When every acknowledged task has finished, the stream ends gracefully with its
``SubscriptionsListenResult``; when the client goes away, the transport cancels
the handler and every watch stops with it.

Only task ids are honoured: FastMCP publishes no list-changed events to listen
streams, so the other kinds of the filter are not acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from fastmcp.server.extensions import read_client_extension_settings
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
)
from pydantic import BaseModel

from fastmcp_temporal.server.core.scope import task_scope
from fastmcp_temporal.server.core.wire import TERMINAL_STATUSES, GetTaskResult, missing_capability
from fastmcp_temporal.server.tasks.engine import TaskEngine
from fastmcp_temporal.server.tasks.task_watch import watch

#: How many tasks one listen stream may follow.
MAX_TASKS_PER_STREAM = 100


class TaskNotification(BaseModel):
    """``notifications/tasks``: the session serializes any model with ``method`` and ``params``."""

    method: str = "notifications/tasks"
    params: dict[str, Any]


def task_frame(task: GetTaskResult, subscription_id: str | int) -> TaskNotification:
    params = task.model_dump(by_alias=True, mode="json", exclude_none=True)
    params.pop("resultType", None)
    params["_meta"] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
    return TaskNotification(params=params)


def requested_task_ids(notifications: SubscriptionFilter) -> list[str]:
    """``taskIds`` from the filter (an extension key, kept as an extra field)."""
    raw = (notifications.model_extra or {}).get("taskIds")
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise MCPError(code=INVALID_PARAMS, message="notifications.taskIds must list strings")
    if len(raw) > MAX_TASKS_PER_STREAM:
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"notifications.taskIds names more than {MAX_TASKS_PER_STREAM} tasks",
        )
    return list(dict.fromkeys(raw))


class TaskListenHandler:
    """Serves ``subscriptions/listen``; the engine is looked up per stream (lifespan-bound)."""

    def __init__(self, engine: Callable[[], TaskEngine]) -> None:
        self._engine = engine

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(code=INVALID_REQUEST, message="subscriptions/listen needs a request id")
        task_ids = requested_task_ids(params.notifications)
        if task_ids and read_client_extension_settings(ctx, TASKS_EXTENSION_ID) is None:
            raise missing_capability(
                f"Listening for tasks needs the tasks extension ({TASKS_EXTENSION_ID}), "
                "which the client did not declare for this request."
            )
        engine, scope = self._engine(), task_scope()
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        firsts = await asyncio.gather(*(_first_view(engine, t, scope) for t in task_ids))
        acknowledged = [task for task in firsts if task is not None]

        async def send(notification: BaseModel) -> None:
            await ctx.session.send_notification(
                notification,  # type: ignore[arg-type]
                related_request_id=subscription_id,
            )

        await send(
            SubscriptionsAcknowledgedNotification(
                params=SubscriptionsAcknowledgedNotificationParams(
                    notifications=SubscriptionFilter.model_validate(
                        {"taskIds": [task.task_id for task in acknowledged]}
                    ),
                    _meta=meta,
                )
            )
        )
        changes: asyncio.Queue[GetTaskResult | None] = asyncio.Queue()
        async with asyncio.TaskGroup() as group:
            for task in acknowledged:
                await send(task_frame(task, subscription_id))
                group.create_task(_follow(engine, task, scope, changes))
            following = len(acknowledged)
            while following:
                change = await changes.get()
                if change is None:
                    following -= 1
                else:
                    await send(task_frame(change, subscription_id))
        return SubscriptionsListenResult(_meta=meta)


async def _first_view(engine: TaskEngine, task_id: str, scope: str | None) -> GetTaskResult | None:
    """The task as ``tasks/get`` shows it; ``None`` when unknown, expired or another caller's."""
    try:
        return await engine.get(task_id, scope)
    except MCPError:
        return None


async def _follow(
    engine: TaskEngine,
    seen: GetTaskResult,
    scope: str | None,
    changes: asyncio.Queue[GetTaskResult | None],
) -> None:
    """Queue each change of one task after ``seen``, then ``None``: this task is done."""
    try:
        if seen.status in TERMINAL_STATUSES:
            return
        views = watch(engine, seen.task_id, scope, progress=True, seen=seen)
        async with contextlib.aclosing(views):
            async for view in views:
                await changes.put(view)
    except MCPError:
        pass  # it expired while watched: nothing more to report
    finally:
        changes.put_nowait(None)
