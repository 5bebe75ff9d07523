"""Metrics: one Prometheus endpoint per process, Temporal's own metrics and the MCP ones.

```python
TemporalTasks(metrics_port=9464)        # or FASTMCP_TEMPORAL_METRICS_PORT=9464
# curl http://127.0.0.1:9464/metrics    (FASTMCP_TEMPORAL_METRICS_HOST=0.0.0.0 in containers)
```

The Temporal SDK already measures its side (workflow and activity task
latencies, slots, polls, RPCs: ``temporal_*``) through its *runtime*, and can
serve it to Prometheus (``PrometheusConfig``). The MCP side goes through the
same runtime's meter, so one endpoint, one scrape, one set of labels:

- ``mcp_tasks_created_total{tool, outcome}``: ``tools/call`` that create a
  task; outcome ``created``, ``idempotent_hit``, ``quota_rejected``,
  ``rejected`` (the client's error) or ``failed`` (ours or Temporal's);
- ``mcp_tasks_finished_total{tool, status}``: tasks that ended ``completed``,
  ``failed`` or ``cancelled`` (counted by the worker that ran the workflow);
- ``mcp_request_duration_seconds{method}``: latency of ``tools/call`` (task
  creation), ``tasks/get``, ``tasks/update`` and ``tasks/cancel``;
- ``mcp_errors_total{method, code}``: JSON-RPC errors those answered, by code;
- ``mcp_tasks_open{status}``: open tasks (``working``, ``input_required``) on
  this server's queue, counted in Temporal visibility by every front end;
- ``mcp_input_required_seconds{tool}``: from parking to the last answer (or
  the end), per round (counted by the worker);
- ``mcp_idempotent_hits_total{tool}``: creations answered with the task an
  idempotency key already made;
- ``mcp_quota_rejections_total{tool}``: creations refused by the caller's quota.

The endpoint needs the runtime before any client exists, so it is made here
and handed to ``Client.connect``: with ``TemporalTasks(client=...)`` the MCP
metrics go through *that* client's runtime (whatever exporter it has), and
``metrics_port`` is refused. Counters recorded while no endpoint is on cost a
no-op call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from fastmcp.exceptions import FastMCPError
from mcp.shared.exceptions import MCPError
from temporalio.client import Client
from temporalio.common import MetricMeter
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from fastmcp_temporal.client_wire import TEMPORAL_UNAVAILABLE
from fastmcp_temporal.server.core import background, visibility
from fastmcp_temporal.server.core.settings import env_var
from fastmcp_temporal.workflows.task_metrics import FINISHED_COUNTER, INPUT_REQUIRED_HISTOGRAM

logger = logging.getLogger(__name__)

METRICS_PORT_ENV = env_var("metrics_port")
METRICS_HOST_ENV = env_var("metrics_host")
#: How often a front end counts its open tasks (two visibility counts each time).
OPEN_TASKS_INTERVAL_S = 15.0

CREATED_COUNTER = "mcp_tasks_created"
REQUEST_HISTOGRAM = "mcp_request_duration_seconds"
ERRORS_COUNTER = "mcp_errors"
OPEN_GAUGE = "mcp_tasks_open"
IDEMPOTENT_HITS_COUNTER = "mcp_idempotent_hits"
QUOTA_REJECTIONS_COUNTER = "mcp_quota_rejections"
#: Every MCP metric as Prometheus shows it (counters get ``_total``).
METRIC_NAMES = (
    f"{CREATED_COUNTER}_total",
    f"{FINISHED_COUNTER}_total",
    REQUEST_HISTOGRAM,
    f"{ERRORS_COUNTER}_total",
    OPEN_GAUGE,
    INPUT_REQUIRED_HISTOGRAM,
    f"{IDEMPOTENT_HITS_COUNTER}_total",
    f"{QUOTA_REJECTIONS_COUNTER}_total",
)
_BUCKETS = {
    REQUEST_HISTOGRAM: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    INPUT_REQUIRED_HISTOGRAM: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 6 * 3600, 86400],
}
#: A creation that fails with these was not the client's doing (a bug, Temporal away): ``failed``;
#: any other code, or FastMCP's ``isError`` answer to bad arguments, is ``rejected``. A quota
#: refusal may share ``-32001``: ``record_quota_rejection`` names its outcome itself.
_SERVER_CODES = frozenset({-32603, TEMPORAL_UNAVAILABLE})
#: One runtime per endpoint address and process: a restarted lifespan reuses it.
_runtimes: dict[str, Runtime] = {}


@dataclass(frozen=True)
class MetricsEndpoint:
    """Where this process serves ``/metrics``."""

    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def runtime(self) -> Runtime:
        """The Temporal runtime serving this endpoint (made once per process)."""
        runtime = _runtimes.get(self.address)
        if runtime is None:
            prometheus = PrometheusConfig(
                bind_address=self.address,
                counters_total_suffix=True,
                durations_as_seconds=True,
                histogram_bucket_overrides=_BUCKETS,
            )
            runtime = Runtime(telemetry=TelemetryConfig(metrics=prometheus))
            _runtimes[self.address] = runtime
            logger.info("fastmcp-temporal: metrics on http://%s/metrics", self.address)
        return runtime


class TaskMetrics:
    """The MCP instruments, on one meter."""

    def __init__(self, meter: MetricMeter) -> None:
        self.created = meter.create_counter(CREATED_COUNTER, "Task creations by outcome")
        self.latency = meter.create_histogram_float(
            REQUEST_HISTOGRAM, "Latency of tools/call task creation and tasks/*", "s"
        )
        self.errors = meter.create_counter(ERRORS_COUNTER, "JSON-RPC errors answered, by code")
        self.open = meter.create_gauge(OPEN_GAUGE, "Open tasks on this server's task queue")
        self.idempotent_hits = meter.create_counter(
            IDEMPOTENT_HITS_COUNTER, "Creations answered with an existing task (idempotency key)"
        )
        self.quota_rejections = meter.create_counter(
            QUOTA_REJECTIONS_COUNTER, "Creations refused by the per-caller quota"
        )


_NOOP = TaskMetrics(MetricMeter.noop)
_current = _NOOP
#: The outcome a creation in progress was given by a hook below (``creating`` reads it).
_creation_outcome: ContextVar[list[str] | None] = ContextVar("mcp_creation_outcome", default=None)


@contextlib.contextmanager
def installed(meter: MetricMeter) -> Iterator[TaskMetrics]:
    """Record this process's MCP metrics on ``meter`` while inside."""
    global _current
    previous, _current = _current, TaskMetrics(meter)
    try:
        yield _current
    finally:
        _current = previous


def record_idempotent_hit(tool: str) -> None:
    """A ``tools/call`` got the task its idempotency key already created (idempotency hook)."""
    _current.idempotent_hits.add(1, {"tool": tool})
    _mark_creation("idempotent_hit")


def record_quota_rejection(tool: str) -> None:
    """A ``tools/call`` was refused by the caller's open-task quota (quota hook)."""
    _current.quota_rejections.add(1, {"tool": tool})
    _mark_creation("quota_rejected")


def _mark_creation(outcome: str) -> None:
    holder = _creation_outcome.get()
    if holder is not None:
        holder[:] = [outcome]


def error_code(err: BaseException) -> int | None:
    """The JSON-RPC code a request that raised ``err`` answers with.

    ``None``: no JSON-RPC error; FastMCP answers a ``tools/call`` that raised
    one of its own errors (bad arguments) with an ``isError`` result.
    """
    if isinstance(err, MCPError):
        return err.error.code
    if isinstance(err, FastMCPError):
        return None
    return -32603


@contextlib.contextmanager
def request(method: str) -> Iterator[None]:
    """Time a ``tasks/*`` request and count the error it answers with, if any."""
    started = time.perf_counter()
    try:
        yield
    except Exception as err:
        if (code := error_code(err)) is not None:
            _current.errors.add(1, {"method": method, "code": str(code)})
        raise
    finally:
        _current.latency.record(time.perf_counter() - started, {"method": method})


@contextlib.contextmanager
def creating(tool: str) -> Iterator[None]:
    """A ``tools/call`` that creates a task: its latency, outcome and error code."""
    holder: list[str] = []
    token = _creation_outcome.set(holder)
    outcome = "created"
    try:
        with request("tools/call"):
            yield
    except Exception as err:
        outcome = "failed" if error_code(err) in _SERVER_CODES else "rejected"
        raise
    finally:
        _creation_outcome.reset(token)
        _current.created.add(1, {"tool": tool, "outcome": holder[0] if holder else outcome})


@contextlib.asynccontextmanager
async def recording(
    client: Client,
    task_queue: str,
    *,
    count_open_tasks: bool,
    interval_s: float | None = None,
) -> AsyncIterator[None]:
    """While inside: MCP metrics on ``client``'s runtime, if it exports any.

    ``count_open_tasks`` (front ends) keeps ``mcp_tasks_open`` current; workers
    leave it to them, so a fleet does not count the same tasks once per worker.
    """
    meter = (client.service_client.config.runtime or Runtime.default()).metric_meter
    if meter is MetricMeter.noop:
        yield
        return
    with installed(meter):
        if not count_open_tasks:
            yield
            return
        interval_s = interval_s or OPEN_TASKS_INTERVAL_S
        async with background.running(_count_open_tasks(client, task_queue, interval_s)):
            yield


async def _count_open_tasks(client: Client, task_queue: str, interval_s: float) -> None:
    """Visibility counts every replica's open tasks (eventually consistent, like Temporal's UI)."""
    while True:
        for status in ("working", "input_required"):
            query = visibility.list_query(status=status, task_queue=task_queue)
            query += ' AND ExecutionStatus = "Running"'
            try:
                count = (await client.count_workflows(query)).count
            except Exception as err:  # no search attributes, or Temporal away: try later
                logger.debug("fastmcp-temporal: could not count open tasks: %s", err)
                continue
            _current.open.set(count, {"status": status})
        await asyncio.sleep(interval_s)
