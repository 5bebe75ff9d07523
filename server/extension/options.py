"""``TemporalTasks``'s arguments, checked once and kept as one frozen value.

Every argument is validated when the extension is built, so a bad one fails at
``TemporalTasks(...)``, not at the first request; values that come from the
environment when not given (``run_worker``, the metrics endpoint, the scope
secret) are read then too. Frozen, because a clone for another server must not
share anything it could change: ``serve_as_worker`` derives a new value
(``as_worker``) instead of editing this one. The connected ``client`` and the
worker ``plugins`` are not options: they are live objects, shared, never copied.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.converter import StorageDriver
from temporalio.service import TLSConfig

from fastmcp_temporal.activities.remote_connections import RemoteServers
from fastmcp_temporal.server.core import metrics, scope
from fastmcp_temporal.server.core.settings import load_settings
from fastmcp_temporal.server.protocol.host_limits import check_host_limits
from fastmcp_temporal.server.tasks.fairness import FairnessHook
from fastmcp_temporal.server.tasks.starter import ToolOptions
from fastmcp_temporal.server.tasks.undelivered import HostTimeout
from fastmcp_temporal.server.temporal.versioning import WorkerVersioning
from fastmcp_temporal.workflows.models import LegPolicy, UndeclaredInput

DEFAULT_TTL_MS = 900_000
DEFAULT_TASK_QUEUE = "mcp-tasks"


@dataclass(frozen=True, kw_only=True)
class ExtensionOptions:
    """One ``TemporalTasks``'s configuration (see its docstring for each option)."""

    #: ``connection.resolve`` keyword arguments: address, namespace, credentials, profile.
    connection: Mapping[str, Any]
    task_queue: str | None
    ttl_ms: int
    run_worker: bool
    #: Set by ``serve_as_worker``: a worker process joins a Temporal but never starts one.
    worker_only: bool = False
    tools: Mapping[str, ToolOptions]
    tracing: bool
    data_dir: Path | None
    ui: bool
    query_timeout: timedelta
    leg_policy: LegPolicy
    max_rounds: int
    rounds_per_run: int
    mrtr_first_tools: frozenset[str]
    mrtr_window: timedelta
    worker_options: Mapping[str, Any]
    remote_servers: RemoteServers
    versioning: WorkerVersioning | None
    scope_secret: bytes | None
    encryption_key: str | None
    #: Seal callers' credentials under this directory's ``credentials-key`` by address
    #: (``None``: ``FASTMCP_TEMPORAL_CREDENTIALS_KEY_DIR``, read when the server starts).
    credentials_key_dir: Path | None
    payload_store: str | StorageDriver | None
    payload_threshold: int | None
    max_payload_bytes: int | None
    undeclared_input: UndeclaredInput
    fairness: bool | FairnessHook | None
    metrics: metrics.MetricsEndpoint | None
    max_open_tasks_per_caller: int | None
    durable_sync_calls: bool
    keepalive_s: float
    wait_reads_per_second: int
    drain_grace_s: float
    session_max_age_s: float
    on_host_timeout: HostTimeout
    host_limits: Mapping[str, float]

    @classmethod
    def resolve(
        cls,
        *,
        client_given: bool,
        address: str | None,
        namespace: str | None,
        api_key: str | None,
        tls: bool | TLSConfig | None,
        profile: str | None,
        task_queue: str | None,
        ttl_ms: int,
        run_worker: bool | None,
        tools: Mapping[str, ToolOptions] | None,
        tracing: bool,
        data_dir: str | Path | None,
        ui: bool,
        query_timeout: timedelta | None,
        leg_policy: LegPolicy | None,
        max_rounds: int,
        rounds_per_run: int,
        mrtr_first_tools: Collection[str],
        mrtr_window: timedelta,
        worker_options: Mapping[str, Any] | None,
        remote_servers: RemoteServers | None,
        versioning: WorkerVersioning | None,
        scope_secret: str | None,
        encryption_key: str | None,
        credentials_key_dir: str | Path | None,
        payload_store: str | StorageDriver | None,
        payload_threshold: int | None,
        max_payload_bytes: int | None,
        undeclared_input: UndeclaredInput,
        fairness: bool | FairnessHook | None,
        metrics_port: int | None,
        metrics_host: str | None,
        max_open_tasks_per_caller: int | None,
        durable_sync_calls: bool | None,
        keepalive_s: float | None,
        wait_reads_per_second: int | None,
        drain_grace_s: float | None,
        session_max_age_s: float | None,
        on_host_timeout: HostTimeout | None,
        host_limits: Mapping[str, float] | None,
    ) -> ExtensionOptions:
        """The arguments checked (``ValueError`` names the bad one), defaults filled in."""
        if ttl_ms <= 0:
            raise ValueError("ttl_ms must be positive")
        if undeclared_input not in ("park", "fail"):
            raise ValueError('undeclared_input must be "park" or "fail"')
        endpoint = metrics.MetricsEndpoint.resolve(metrics_port, metrics_host)
        if client_given and metrics_port is not None:
            raise ValueError(
                "Pass metrics_port or client, not both: a client's Temporal runtime decides "
                "its metrics (connect it with runtime=Runtime(telemetry=...PrometheusConfig))"
            )
        if max_open_tasks_per_caller is not None and max_open_tasks_per_caller <= 0:
            raise ValueError("max_open_tasks_per_caller must be positive")
        if keepalive_s is not None and keepalive_s <= 0:
            raise ValueError("keepalive_s must be positive")
        if wait_reads_per_second is not None and wait_reads_per_second <= 0:
            raise ValueError("wait_reads_per_second must be positive")
        if drain_grace_s is not None and drain_grace_s < 0:
            raise ValueError("drain_grace_s must not be negative")
        if session_max_age_s is not None and session_max_age_s <= 0:
            raise ValueError("session_max_age_s must be positive")
        if on_host_timeout is not None and on_host_timeout not in ("detach", "cancel"):
            raise ValueError('on_host_timeout must be "detach" or "cancel"')
        settings = load_settings()
        if client_given and encryption_key is not None:
            raise ValueError(
                "Pass encryption_key or client, not both: a client's data converter "
                "decides its encryption (build it with task_data_converter(key))"
            )
        configured_secret = scope.configured_secret(scope_secret)
        return cls(
            connection={
                "address": address,
                "namespace": namespace,
                "api_key": api_key,
                "tls": tls,
                "profile": profile,
            },
            task_queue=task_queue,
            ttl_ms=ttl_ms,
            run_worker=settings.run_worker if run_worker is None else run_worker,
            tools=dict(tools or {}),
            tracing=tracing,
            data_dir=Path(data_dir) if data_dir is not None else None,
            ui=ui,
            query_timeout=(
                timedelta(seconds=settings.query_timeout)
                if query_timeout is None
                else query_timeout
            ),
            leg_policy=leg_policy or LegPolicy(),
            max_rounds=max_rounds,
            rounds_per_run=rounds_per_run,
            mrtr_first_tools=frozenset(mrtr_first_tools),
            mrtr_window=mrtr_window,
            worker_options=dict(worker_options or {}),
            remote_servers=dict(remote_servers or {}),
            versioning=versioning,
            scope_secret=configured_secret,
            encryption_key=encryption_key,
            credentials_key_dir=Path(credentials_key_dir) if credentials_key_dir else None,
            payload_store=payload_store,
            payload_threshold=payload_threshold,
            max_payload_bytes=max_payload_bytes,
            undeclared_input=undeclared_input,
            fairness=fairness,
            metrics=endpoint,
            max_open_tasks_per_caller=max_open_tasks_per_caller,
            durable_sync_calls=(
                settings.durable_sync_calls if durable_sync_calls is None else durable_sync_calls
            ),
            keepalive_s=settings.keepalive_s if keepalive_s is None else keepalive_s,
            wait_reads_per_second=(
                settings.wait_reads_per_second
                if wait_reads_per_second is None
                else wait_reads_per_second
            ),
            drain_grace_s=settings.drain_grace_s if drain_grace_s is None else drain_grace_s,
            session_max_age_s=(
                settings.session_max_age_s if session_max_age_s is None else session_max_age_s
            ),
            on_host_timeout=(
                settings.on_host_timeout if on_host_timeout is None else on_host_timeout
            ),
            host_limits=check_host_limits(
                settings.host_limits if host_limits is None else host_limits
            ),
        )

    def as_worker(
        self,
        *,
        task_queue: str | None,
        connection: Mapping[str, Any] | None,
        versioning: WorkerVersioning | None,
        payload_store: str | None,
        data_dir: str | Path | None,
        worker_options: Mapping[str, Any],
    ) -> ExtensionOptions:
        """These options for a worker process (``serve_as_worker``): given values win."""
        given_connection = {k: v for k, v in (connection or {}).items() if v is not None}
        return replace(
            self,
            run_worker=True,
            worker_only=True,
            versioning=versioning or self.versioning,
            payload_store=payload_store if payload_store is not None else self.payload_store,
            data_dir=Path(data_dir) if data_dir is not None else self.data_dir,
            task_queue=task_queue or self.task_queue,
            connection={**self.connection, **given_connection},
            worker_options={**self.worker_options, **worker_options},
        )

    def queue(self, server_name: str, *, embedded: bool) -> str:
        """The queue tasks run on (see ``task_queue`` in ``TemporalTasks``'s docstring)."""
        if self.task_queue is not None:
            return self.task_queue
        if not embedded:
            return DEFAULT_TASK_QUEUE
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", server_name).strip("-")
        return f"{DEFAULT_TASK_QUEUE}-{name or 'server'}"

    def worker_versioning(self) -> WorkerVersioning | None:
        """The worker's version: the argument, else the environment; front ends have none."""
        if not self.run_worker:
            return None
        return self.versioning or WorkerVersioning.resolve()


__all__ = ["DEFAULT_TASK_QUEUE", "DEFAULT_TTL_MS", "ExtensionOptions"]
