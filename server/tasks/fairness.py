"""Fairness between callers: one caller's backlog must not hold up everyone else's tasks.

All tasks share one task queue, and a queue is first in, first out: a caller
who creates 1 000 slow tasks would make every other caller's next task wait
behind all of them. Temporal's task-queue fairness (Server >= 1.29) dispatches
a backlog round-robin between *fairness keys*, in proportion to their weights.
Each task's workflow starts with its caller's key, and its legs (activities)
and a workflow tool's child workflow inherit it from the workflow, so both the
state machine and the tool bodies are shared fairly:

```python
TemporalTasks()                                  # on: one key per caller scope, weight 1
TemporalTasks(fairness=False)                    # off (or FASTMCP_TEMPORAL_FAIRNESS=false)
TemporalTasks(fairness=lambda caller: (caller.client_id or "anon", 2.0 if paying(caller) else 1.0))
```

The default key is the scope's tag in the workflow id (``scope.scope_tag``):
an HMAC of the caller's principal, so the key shown in the Web UI and in
``describe`` names no one. A hook returns ``(key, weight)``, or ``None`` for
that default. Anonymous callers share one scope, and so one key.

The server must have fairness on: the embedded dev server starts with it (see
``devserver.FAIRNESS_DYNAMIC_CONFIG``); a self-hosted cluster needs
``matching.enableFairness``, Temporal Cloud the namespace's Fairness switch. A
server without it accepts the key and dispatches first in, first out, as before.

It also needs one write partition per task queue. Fairness orders each
task-queue *partition* on its own, and Temporal writes each new task to a random
one of ``matching.numTaskqueueWritePartitions`` (four unless configured): on
four, another caller's task waits behind whatever its partition holds and how
that partition happens to be served (measured: 0.4 to 10.7 s behind 80 tasks of
1 s on 4 slots, against under 2 s with one partition;
``bench/investigations/2026-12-05-fairness-regression``). Nothing a client
sends changes that, so a process that starts tasks with fairness on watches
for it (``partition_watch``): once a minute it reads whether its queues' tasks
wait on any partition but the first, and says so once, with the setting that
fixes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from dataclasses import dataclass, field

from temporalio.api.enums.v1 import TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.common import Priority
from temporalio.service import RPCError, RPCStatusCode

from fastmcp_temporal.server.core import background
from fastmcp_temporal.server.core.scope import scope_tag
from fastmcp_temporal.server.core.settings import env_var, load_settings
from fastmcp_temporal.workflows.models import CallerSnapshot

logger = logging.getLogger(__name__)

FAIRNESS_ENV = env_var("fairness")
#: Temporal's limit on a fairness key.
MAX_KEY_BYTES = 64
#: Temporal clamps weights to this range.
MIN_WEIGHT, MAX_WEIGHT = 0.001, 1000.0
#: How often ``partition_watch`` looks at where the queue's tasks wait.
PARTITION_CHECK_S = 60.0
#: The partitions after the first that it reads (Temporal's default is four).
PROBED_PARTITIONS = (1, 2, 3)
_TASK_TYPES = {
    "workflow": TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    "activity": TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
}
#: A Temporal that will not describe a partition: the watch stops, it cannot tell.
_CANNOT_TELL = (
    RPCStatusCode.INVALID_ARGUMENT,
    RPCStatusCode.PERMISSION_DENIED,
    RPCStatusCode.UNIMPLEMENTED,
)


@dataclass(frozen=True)
class FairnessCaller:
    """Who creates a task, as a fairness hook sees it.

    ``scope`` is the caller's principal as ``scope.task_scope`` encodes it
    (``None``: anonymous); ``client_id``/``subject`` are its parts. The hook
    runs in the creating ``tools/call``, so FastMCP's ``get_access_token()``
    works in it too.
    """

    tool_name: str
    scope: str | None
    client_id: str | None
    subject: str | None
    http_headers: Mapping[str, str] = field(default_factory=dict)


FairnessHook = Callable[[FairnessCaller], "tuple[str, float] | None"]


class Fairness:
    """The ``Priority`` each new task's workflow starts with (``None``: fairness off)."""

    def __init__(self, hook: FairnessHook | None, *, scope_secret: bytes | None) -> None:
        self.hook = hook
        self.scope_secret = scope_secret

    @classmethod
    def resolve(
        cls, setting: bool | FairnessHook | None, *, scope_secret: bytes | None
    ) -> Fairness | None:
        """The constructor's ``fairness`` setting, else ``FASTMCP_TEMPORAL_FAIRNESS`` (on)."""
        if setting is None:
            setting = load_settings().fairness
        if setting is False:
            return None
        return cls(None if setting is True else setting, scope_secret=scope_secret)

    def priority(self, tool_name: str, caller: CallerSnapshot) -> Priority:
        key = scope_tag(caller.scope, self.scope_secret)
        weight = 1.0
        if self.hook is not None:
            chosen = self.hook(_fairness_caller(tool_name, caller))
            if chosen is not None:
                key, weight = chosen
                _check(key, weight)
        return Priority(fairness_key=key, fairness_weight=weight)


def _fairness_caller(tool_name: str, caller: CallerSnapshot) -> FairnessCaller:
    client_id = subject = None
    if caller.scope is not None:
        client_id, _issuer, subject = json.loads(caller.scope)
    return FairnessCaller(
        tool_name=tool_name,
        scope=caller.scope,
        client_id=client_id,
        subject=subject,
        http_headers=dict(caller.http_headers or {}),
    )


def _check(key: str, weight: float) -> None:
    """A hook's answer Temporal would refuse or silently change is a server bug: say so."""
    if not isinstance(key, str) or not key or len(key.encode()) > MAX_KEY_BYTES:
        raise ValueError(
            f"The fairness hook returned key {key!r}: a non-empty string of at most "
            f"{MAX_KEY_BYTES} bytes (hash longer ones)"
        )
    if not MIN_WEIGHT <= weight <= MAX_WEIGHT:
        raise ValueError(
            f"The fairness hook returned weight {weight!r} for {key!r}: "
            f"between {MIN_WEIGHT} and {MAX_WEIGHT}"
        )


async def _backlog(client: Client, queue: str, task_type: TaskQueueType.ValueType) -> int:
    """How many tasks wait on one partition (the first, or ``/_sys/<queue>/<n>``)."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
        task_queue_type=task_type,
        include_task_queue_status=True,
    )
    response = await client.workflow_service.describe_task_queue(request)
    return response.task_queue_status.backlog_count_hint


async def waiting_by_partition(client: Client, task_queue: str) -> dict[str, dict[int, int]]:
    """Per task type, how many tasks of ``task_queue`` wait on each partition that has any.

    Temporal writes a new task to a random one of the queue's write partitions,
    so tasks waiting on a partition but the first mean the queue's writes are
    spread. Every probed partition is read, the first too: with four, all of a
    small backlog misses the first one often enough (16 tasks: about one time in a
    hundred) that reading the others only when the first has some would miss it.
    """
    found: dict[str, dict[int, int]] = {}
    partitions = {0: task_queue} | {n: f"/_sys/{task_queue}/{n}" for n in PROBED_PARTITIONS}
    for name, task_type in _TASK_TYPES.items():
        counts: dict[int, int] = {}
        for n, partition in partitions.items():
            if waiting := await _backlog(client, partition, task_type):
                counts[n] = waiting
        if counts:
            found[name] = counts
    return found


@contextlib.asynccontextmanager
async def partition_watch(
    client: Client, task_queues: Collection[str], *, interval_s: float | None = None
) -> AsyncIterator[None]:
    """While inside: warn once if Temporal spreads any of ``task_queues`` over partitions
    (looked at every ``interval_s``, default ``PARTITION_CHECK_S``)."""
    queues = sorted(set(task_queues))
    async with background.running(
        _watch_partitions(client, queues, interval_s or PARTITION_CHECK_S)
    ):
        yield


async def _watch_partitions(client: Client, task_queues: list[str], interval_s: float) -> None:
    while True:
        await asyncio.sleep(interval_s)
        for queue in task_queues:
            try:
                found = await waiting_by_partition(client, queue)
            except RPCError as err:
                if err.status in _CANNOT_TELL:
                    logger.debug("fastmcp-temporal: cannot read %r's partitions: %s", queue, err)
                    return
                continue  # Temporal busy or away: next round
            except Exception as err:  # advice only: never the server's failure
                logger.debug("fastmcp-temporal: could not read %r's partitions: %s", queue, err)
                continue
            spread = {kind: sorted(counts) for kind, counts in found.items() if len(counts) > 1}
            if spread:
                where = "; ".join(f"{kind} tasks on {parts}" for kind, parts in spread.items())
                logger.warning(
                    "fastmcp-temporal: Temporal spreads task queue %r over several partitions "
                    "(%s), and fairness between callers holds within "
                    "each partition only: one caller's backlog can still delay another "
                    "caller's task by many seconds (measured: up to 10.7 s behind 80 tasks, "
                    "under 2 s with one partition). Give the queue one write partition: "
                    "dynamic config matching.numTaskqueueWritePartitions=1 on a self-hosted "
                    "cluster, or ask Temporal Cloud support (docs/guides/deploying.md).",
                    queue,
                    where,
                )
                return
