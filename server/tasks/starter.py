"""How a task's workflow is started: per-tool TTL and routing, and what the UI shows.

```python
TemporalTasks(tools={"render": ToolOptions(task_queue="gpu", ttl_ms=3_600_000)})
```

Per tool, a task can get its own ``ttlMs`` and send its legs (the tool body) to
their own task queue, e.g. workers with GPUs: ``fastmcp-temporal worker
server.py --task-queue gpu``. The workflow itself stays on the extension's
queue, so any worker can run the state machine and only the legs need the GPU.

The TTL is also the workflow's *execution timeout* (plus ``EXPIRY_GRACE``):
Temporal ends a task that is still running when its TTL is over, with no worker
needed, and a closed workflow is then purged by the namespace's retention.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy

from fastmcp_temporal.server.core import visibility
from fastmcp_temporal.server.core.credentials import CredentialPolicy
from fastmcp_temporal.server.tasks.fairness import Fairness
from fastmcp_temporal.workflows.models import LegPolicy, TaskStart

logger = logging.getLogger(__name__)

#: How long past its TTL a task may still run before Temporal ends it. A parked
#: task fails itself at its TTL; this margin keeps that (clearer) end first.
EXPIRY_GRACE = timedelta(minutes=1)
#: The workflow task timeout of a task whose legs are local. A local leg runs
#: inside a workflow task, which the SDK keeps open by completing it at 80 % of
#: this timeout; only then does the worker see a ``tasks/cancel`` (or any other
#: new event), so it bounds how late a running local leg learns it is cancelled.
#: Temporal's default (10 s) made that ~8 s; this makes it at most ~1.6 s, for
#: ~3 more history events per 1.6 s of a running leg
#: (``bench/investigations/2026-12-01-local-cancel``).
LOCAL_LEGS_TASK_TIMEOUT = timedelta(seconds=2)
#: Temporal's ceiling for a workflow task timeout (a longer one is cut to it).
MAX_TASK_TIMEOUT = timedelta(seconds=120)


@dataclass(frozen=True)
class ToolOptions:
    """Per-tool overrides of the extension's defaults.

    Args:
        ttl_ms: The ``ttlMs`` of this tool's tasks.
        task_queue: Where this tool's legs run (workers started with
            ``--task-queue``); the workflow stays on the extension's queue.
        local_legs: Run this tool's legs as local activities, in the worker that
            runs the workflow: about twice the tasks per second for short legs.
            A ``tasks/cancel`` reaches a running local leg when the SDK next
            completes the workflow task it runs in, at 80 % of
            ``workflow_task_timeout``; its progress is a signal to its workflow
            (coalesced, at most one a second), applied then and written to the
            memo -- seen by ``tasks/get`` -- at the completion after (~3.2 s
            behind with the 2 s default). It is retried only at its timeout
            (``LegPolicy.local_timeout_s``).
            ``None`` (the default): local for a *short* tool -- one whose FastMCP
            ``timeout`` is set and below ``LegPolicy.local_timeout_s`` (30 s),
            so it cannot hold a workflow task longer than that -- unless its
            legs go to their own ``task_queue`` (a local leg runs where the
            workflow runs). ``True``/``False`` decide for the tool. A leg that
            follows the client's answers is an activity either way
            (``workflows.local_legs.ACTIVITY_LEGS_AFTER_INPUT``).
        workflow_task_timeout: The Temporal workflow task timeout of this tool's
            tasks. ``None``: ``LOCAL_LEGS_TASK_TIMEOUT`` (2 s) when its legs
            are local, so a running local leg sees a cancel within ~1.6 s
            (Temporal's 10 s default: ~8 s), at the price of three history
            events (a workflow task) per ~1.6 s of a running local leg (a leg
            shorter than that adds none); a lost worker's local leg also runs
            again after 2 s rather than 10. Temporal's default without. Shorter
            costs more history (1 s: twice the events, for ~0.8 s), and a worker
            that cannot answer a workflow task within the timeout makes it time
            out and run again (none did in ``bench/investigations/2026-12-01-local-cancel``,
            down to 1 s, beside busy loops or with the worker's event loop starved).
        max_open_tasks_per_caller: This tool's own quota: each caller may have
            this many open tasks of it, counted apart from the extension's
            ``max_open_tasks_per_caller`` (see ``server.tasks.quota``).
        durable_sync_calls: Whether a ``tools/call`` of this tool from a client
            that did not opt in to tasks runs as a task and waits for its end
            (``server.protocol.sync_calls``). ``None``: the extension's
            ``durable_sync_calls``; ``False``: inline, e.g. for a body that needs
            the live request in a way the task cannot relay.
        attach_repeats: Whether a plain call of this tool made again -- same caller,
            same arguments -- after its host gave up on the first one attaches to
            that first task and answers its result (``server.protocol.reattach``;
            ``None``: yes). ``False`` for a tool each call of which must run
            afresh (a roll of the dice, a new id): a repeated call is then a new
            task, a host's timeout cancels the task as a person's cancel does, and
            the server does not answer early before a host's hard limit.
    """

    ttl_ms: int | None = None
    task_queue: str | None = None
    local_legs: bool | None = None
    workflow_task_timeout: timedelta | None = None
    max_open_tasks_per_caller: int | None = None
    durable_sync_calls: bool | None = None
    attach_repeats: bool | None = None

    def __post_init__(self) -> None:
        if self.ttl_ms is not None and self.ttl_ms <= 0:
            raise ValueError("ttl_ms must be positive")
        if self.max_open_tasks_per_caller is not None and self.max_open_tasks_per_caller <= 0:
            raise ValueError("max_open_tasks_per_caller must be positive")
        timeout = self.workflow_task_timeout
        if timeout is not None and not timedelta(0) < timeout <= MAX_TASK_TIMEOUT:
            raise ValueError("workflow_task_timeout must be positive and at most 120 s")


class WorkflowStarter:
    """``start_workflow`` for tasks: type, summary, details, search attributes, timeout."""

    def __init__(self, client: Client, *, task_queue: str, tools: Mapping[str, ToolOptions]):
        self.client = client
        self.task_queue = task_queue
        self.tools = dict(tools)
        #: Off after the namespace refused them once (logged once).
        self.search_attributes = True
        #: The caller's fairness key and weight on each task (``None``: off; see ``fairness``).
        self.fairness: Fairness | None = None
        #: Seals (or drops) the caller's credentials before they reach Temporal
        #: (``server.core.credentials``; the lifespan sets this process's policy).
        self.credentials = CredentialPolicy()

    def ttl_ms(self, tool_name: str, default: int) -> int:
        options = self.tools.get(tool_name)
        return options.ttl_ms if options and options.ttl_ms else default

    def leg_policy(
        self, tool_name: str, default: LegPolicy, *, tool_timeout_s: float | None = None
    ) -> LegPolicy:
        """The tool's legs: its queue, and whether they run locally (see ``ToolOptions``).

        ``tool_timeout_s`` is the FastMCP tool's own ``timeout``.
        """
        options = self.tools.get(tool_name) or ToolOptions()
        update: dict[str, Any] = {}
        if options.task_queue is not None:
            update["task_queue"] = options.task_queue
        if options.local_legs is not None:
            update["local"] = options.local_legs
        elif update.get("task_queue", default.task_queue) is None and tool_timeout_s is not None:
            update["local"] = tool_timeout_s < default.local_timeout_s
        return default.model_copy(update=update) if update else default

    def attaches_repeats(self, tool_name: str) -> bool:
        """Whether a repeated plain call of the tool may attach to an undelivered task."""
        options = self.tools.get(tool_name)
        return options is None or options.attach_repeats is not False

    def task_timeout(self, tool_name: str, *, local_legs: bool) -> timedelta | None:
        """The workflow task timeout its tasks start with (``None``: Temporal's default)."""
        options = self.tools.get(tool_name)
        if options is not None and options.workflow_task_timeout is not None:
            return options.workflow_task_timeout
        return LOCAL_LEGS_TASK_TIMEOUT if local_legs else None

    async def start(
        self, start: TaskStart, *, id: str, reuse_id: bool = False, **options: Any
    ) -> str:
        """Start ``McpTask:<tool>``; without the search attributes if the namespace lacks them.

        Returns the run id of the started workflow.

        ``reuse_id``: a *closed* workflow with this id does not stop the start (an
        idempotency key whose task expired, see ``server.protocol.idempotency``); a running
        one always does.
        """
        options.update(
            id=id,
            task_queue=self.task_queue,
            static_summary=visibility.static_summary(start.tool_name, start.arguments),
            static_details=visibility.static_details(
                task_id=start.task_id,
                tool_name=start.tool_name,
                tool_version=start.tool_version,
                created_at=start.created_at,
                ttl_ms=start.ttl_ms,
                leg_queue=start.leg_policy.task_queue or self.task_queue,
            ),
            execution_timeout=timedelta(milliseconds=start.ttl_ms) + EXPIRY_GRACE,
            id_reuse_policy=(
                WorkflowIDReusePolicy.ALLOW_DUPLICATE
                if reuse_id
                else WorkflowIDReusePolicy.REJECT_DUPLICATE
            ),
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
        )
        task_timeout = self.task_timeout(start.tool_name, local_legs=start.leg_policy.local)
        if task_timeout is not None:
            options["task_timeout"] = task_timeout
        if self.fairness is not None:  # the legs inherit it from the workflow
            options["priority"] = self.fairness.priority(start.tool_name, start.caller)
        # After fairness, whose hook may read the headers: nothing below is in clear.
        start = start.model_copy(update={"caller": await self.credentials.protect(start.caller)})
        workflow_type = visibility.workflow_type(start.tool_name)
        if self.search_attributes:
            try:
                handle = await self.client.start_workflow(
                    workflow_type,
                    start.model_copy(update={"search_attributes": True}),
                    search_attributes=visibility.start_search_attributes(start.tool_name),
                    **options,
                )
                return handle.result_run_id or ""
            except Exception as err:
                if not visibility.is_missing_search_attribute(err):
                    raise
                self.search_attributes = False
                logger.warning(
                    "fastmcp-temporal: namespace %r has no search attributes %s (%s); tasks "
                    "start without them, so the Web UI cannot filter by tool or status. "
                    "Register them: temporal operator search-attribute create --name "
                    "McpToolName --type Keyword --name McpTaskStatus --type Keyword",
                    self.client.namespace,
                    " and ".join(visibility.SEARCH_ATTRIBUTE_SPECS),
                    err,
                )
        handle = await self.client.start_workflow(workflow_type, start, **options)
        return handle.result_run_id or ""
