"""``TemporalTasks``'s configuration: its arguments and ``FASTMCP_TEMPORAL_*``, one model.

``ExtensionOptions`` *is* ``TemporalTasksSettings`` -- every variable, the model the
rest of the package reads -- with the arguments that have no variable added: where
Temporal is (``temporalio.envconfig`` reads Temporal's own variables), the live
objects (each tool's ``ToolOptions``, a ``LegPolicy``, a versioning, remote servers,
a ``StorageDriver``, a fairness hook, worker options) and the values whose default
the signature states. ``TemporalTasks(...)`` builds it from the arguments it was
given: an argument wins over its variable, which is then not even parsed, and every
value is checked once, by the field that declares it, so a bad one fails at
``TemporalTasks(...)`` with the argument's or the variable's name.

The lifespan builds it again from the same arguments when the server starts
(``at_start``): a variable set in between -- by a launcher, a test -- counts there,
as it does for every part that reads the settings when it needs them. Frozen: a
clone for another server shares nothing it could change, and ``serve_as_worker``
derives a new value (``as_worker``). The connected ``client`` and the worker
``plugins`` are not options: they are live objects, shared, never copied.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, InstanceOf, PrivateAttr, SecretStr, ValidationError, field_validator
from pydantic_settings import SettingsConfigDict
from temporalio.converter import StorageDriver
from temporalio.service import TLSConfig

from fastmcp_temporal.server.core import metrics, scope
from fastmcp_temporal.server.core.settings import (
    SettingsError,
    TemporalTasksSettings,
    problems,
    revealed,
)
from fastmcp_temporal.server.protocol.host_limits import check_host_limits
from fastmcp_temporal.server.tasks.fairness import FairnessHook
from fastmcp_temporal.server.tasks.starter import ToolOptions
from fastmcp_temporal.server.temporal.versioning import WorkerVersioning
from fastmcp_temporal.workflows.models import LegPolicy

DEFAULT_TTL_MS = 900_000
DEFAULT_TASK_QUEUE = "mcp-tasks"
#: Arguments a connected ``client`` makes meaningless, and why.
_CLIENT_DECIDES = {
    "metrics_port": "a client's Temporal runtime decides its metrics (connect it with "
    "runtime=Runtime(telemetry=...PrometheusConfig))",
    "encryption_key": "a client's data converter decides its encryption (build it with "
    "task_data_converter(key))",
}


class ExtensionOptions(TemporalTasksSettings):
    """One ``TemporalTasks``'s configuration (see its docstring for each option).

    The fields beyond ``TemporalTasksSettings``'s have no variable: only an
    argument sets them.
    """

    model_config = SettingsConfigDict(arbitrary_types_allowed=True)

    address: str | None = None
    namespace: str | None = None
    api_key: SecretStr | None = None
    tls: bool | InstanceOf[TLSConfig] | None = None
    profile: str | None = None
    task_queue: str | None = None
    ttl_ms: Annotated[int, Field(gt=0)] = DEFAULT_TTL_MS
    tools: dict[str, InstanceOf[ToolOptions]] = {}
    tracing: bool = False
    ui: bool = True
    leg_policy: Annotated[InstanceOf[LegPolicy], Field(default_factory=LegPolicy)]
    max_rounds: int = 1000
    rounds_per_run: int = 200
    mrtr_first_tools: frozenset[str] = frozenset()
    mrtr_window: timedelta = timedelta(seconds=5)
    worker_options: dict[str, Any] = {}
    remote_servers: dict[str, Any] = {}
    versioning: InstanceOf[WorkerVersioning] | None = None
    undeclared_input: Literal["park", "fail"] = "park"
    # An argument may be a driver or a hook; the variables are a URL and a switch.
    payload_store: str | InstanceOf[StorageDriver] | None = None
    fairness: bool | FairnessHook = True
    #: Set by ``serve_as_worker``: a worker process joins a Temporal but never starts one.
    worker_only: bool = False

    _arguments: dict[str, Any] = PrivateAttr(default_factory=dict)

    @field_validator("query_timeout", mode="before")
    @classmethod
    def _seconds(cls, value: Any) -> Any:
        """The argument is a ``timedelta``; the variable, like the field, seconds."""
        return value.total_seconds() if isinstance(value, timedelta) else value

    @field_validator("host_limits")
    @classmethod
    def _host_limits(cls, value: dict[str, float]) -> dict[str, float]:
        return check_host_limits(value)

    @classmethod
    def from_arguments(cls, *, client_given: bool, **arguments: Any) -> ExtensionOptions:
        """The options of these arguments (``None``: not given) and the environment now.

        A ``SettingsError`` (a ``ValueError``) names each bad argument or variable.
        """
        given = {name: value for name, value in arguments.items() if value is not None}
        for exclusive, why in _CLIENT_DECIDES.items():
            if client_given and exclusive in given:
                raise ValueError(f"Pass {exclusive} or client, not both: {why}")
        try:
            options = cls(**given)
        except ValidationError as err:
            raise SettingsError(problems(err, model=cls, arguments=given)) from None
        options._arguments = given
        options.scope_key()  # a secret too short fails here, not at start
        return options

    def at_start(self) -> ExtensionOptions:
        """The same arguments over the environment as it is now, when the server starts."""
        return self._again()

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
        return self._again(
            **(connection or {}),
            run_worker=True,
            worker_only=True,
            versioning=versioning,
            payload_store=payload_store,
            data_dir=data_dir,
            task_queue=task_queue,
            worker_options={**self.worker_options, **worker_options},
        )

    def _again(self, **changed: Any) -> ExtensionOptions:
        given = {name: value for name, value in changed.items() if value is not None}
        return self.from_arguments(client_given=False, **{**self._arguments, **given})

    @property
    def connection(self) -> dict[str, Any]:
        """``connection.resolve`` keyword arguments: address, namespace, credentials, profile."""
        return {
            "address": self.address,
            "namespace": self.namespace,
            "api_key": revealed(self.api_key),
            "tls": self.tls,
            "profile": self.profile,
        }

    @property
    def metrics(self) -> metrics.MetricsEndpoint | None:
        """Where ``/metrics`` is served, if anywhere."""
        if self.metrics_port is None:
            return None
        return metrics.MetricsEndpoint(self.metrics_host, self.metrics_port)

    def scope_key(self) -> bytes | None:
        """The configured scope secret, checked (too short: a ``ValueError`` naming it)."""
        if self.scope_secret is None:
            return None
        origin = "scope_secret" if "scope_secret" in self._arguments else scope.SCOPE_SECRET_ENV
        return scope.parse_secret(self.scope_secret.get_secret_value(), origin=origin)

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
