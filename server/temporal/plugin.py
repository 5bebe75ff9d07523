"""``McpTasksPlugin``: MCP tasks as a Temporal plugin, for any ``Worker``.

```python
client = await Client.connect("localhost:7233", plugins=[McpTasksPlugin(mcp)])
worker = Worker(client, task_queue="mcp-tasks")  # inherits the client's plugins
```

It bundles what a worker needs to run the tasks of one FastMCP server: the task
workflows (``McpTask:<tool>``, and ``McpTask`` for tasks started before), the
tool-leg activity bound to that server, the pydantic data converter the task
models need with the encryption codec (``encryption_key`` or
``FASTMCP_TEMPORAL_ENCRYPTION_KEY``), and sandbox pass-through for the MCP stack
(its import chain touches ``gettext`` at import time, which the sandbox forbids).
The converter is a client setting: pass the plugin to ``Client.connect`` (a
worker inherits it), or connect with ``task_data_converter()``. With
``versioning`` the worker joins a Worker Deployment Version (see ``versioning``).
For tasks whose front ends sealed callers' credentials under an embedded dev
server's ``credentials-key`` (``server.core.credentials``), ``credentials_key_dir``
names that server's data directory.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from temporalio.client import ClientConfig
from temporalio.converter import DataConverter, ExternalStorage
from temporalio.plugin import SimplePlugin
from temporalio.worker import WorkerConfig, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from fastmcp_temporal.activities.leg_news import LegNews
from fastmcp_temporal.activities.tool_leg import ToolLegActivity
from fastmcp_temporal.server.core.codec import task_data_converter
from fastmcp_temporal.server.core.credentials import CredentialPolicy, embedded_seal
from fastmcp_temporal.server.core.settings import load_settings
from fastmcp_temporal.server.core.task_payloads import converter_step, payload_converter_for
from fastmcp_temporal.server.temporal.versioning import WorkerVersioning
from fastmcp_temporal.timing import TICK_S
from fastmcp_temporal.workflows.models import DEFAULT_MAX_PAYLOAD_BYTES
from fastmcp_temporal.workflows.task_workflow import McpTaskWorkflow, McpToolTaskWorkflow

#: Modules the workflow sandbox shares with the worker instead of re-importing
#: them for every workflow run. ``beartype`` is here because FastMCP's storage
#: dependency (``py-key-value-aio``) installs beartype's import hook process-wide:
#: without it, each sandboxed import of a user's workflow module re-imports
#: beartype's internals too (~130 ms of CPU per workflow run,
#: ``bench/investigations/2026-11-30-ab-changes``).
_PASSTHROUGH = ("fastmcp_temporal", "fastmcp", "mcp", "mcp_types", "pydantic", "beartype")


def _task_converter(
    encryption_key: str | None, payload_storage: ExternalStorage | None
) -> Callable[[DataConverter | None], DataConverter]:
    """Keep a codec and a store the caller configured; else the task codec / ``payload_storage``.

    A payload converter another plugin set first (the OpenAI Agents SDK's) stays
    the converter of every payload that is not a task model (``task_payloads``).
    """

    def resolve(converter: DataConverter | None) -> DataConverter:
        storage = payload_storage
        outer = None
        if converter is not None:
            outer = converter.payload_converter_class
            if converter.external_storage is not None:
                storage = converter.external_storage
        if converter is None or converter.payload_codec is None:
            return task_data_converter(
                encryption_key, payload_storage=storage, payload_converter_class=outer
            )
        return dataclasses.replace(
            converter,
            payload_converter_class=payload_converter_for(outer),
            external_storage=storage,
        )

    return resolve


def _passthrough(runner: WorkflowRunner | None) -> WorkflowRunner:
    if runner is None:
        runner = SandboxedWorkflowRunner()
    if isinstance(runner, SandboxedWorkflowRunner):
        return dataclasses.replace(
            runner, restrictions=runner.restrictions.with_passthrough_modules(*_PASSTHROUGH)
        )
    return runner


class McpTasksPlugin(SimplePlugin):
    """The task workflows + the tool-leg activity of ``server`` + the task converter."""

    def __init__(
        self,
        server: FastMCP,
        *,
        heartbeat_interval_s: float = TICK_S,
        encryption_key: str | None = None,
        workflows: Sequence[type] = (),
        activities: Sequence[Callable[..., Any]] = (),
        versioning: WorkerVersioning | None = None,
        payload_storage: ExternalStorage | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        credentials_key_dir: str | Path | None = None,
        credentials: CredentialPolicy | None = None,
        leg_news: LegNews | None = None,
    ) -> None:
        """``workflows``/``activities``: the server's workflow tools and their
        activities (``workflow_tool_parts(server)``), hosted on the same worker.
        ``versioning``: the worker's Deployment Version (``None``: unversioned;
        ``WorkerVersioning.resolve()`` reads it from the environment).
        ``payload_storage``: where big payloads go when the client has no store
        (``PayloadStoreSettings.open``); ``max_payload_bytes``: the largest result.
        ``credentials_key_dir``: the data directory of the embedded Temporal whose
        ``credentials-key`` the front ends sealed callers under (their
        ``credentials_key_dir``, or that Temporal's own ``data_dir``), so the legs
        get the caller's token and headers back; default
        ``FASTMCP_TEMPORAL_CREDENTIALS_KEY_DIR``, else none (a sealed caller's leg
        is handed back for a worker that has the key). ``credentials``: this
        process's policy, as the extension resolved it (wins over the directory).
        ``leg_news``: a front end's own worker tells the calls waiting there what its
        legs do (``activities.leg_news``); a worker of its own has nobody to tell."""
        self._versioning = versioning
        if credentials is None:
            key_dir = credentials_key_dir or load_settings().credentials_key_dir
            if key_dir:
                credentials = CredentialPolicy(seal=embedded_seal(Path(key_dir)))
        legs = ToolLegActivity(
            server,
            heartbeat_interval_s=heartbeat_interval_s,
            max_result_bytes=max_payload_bytes,
            open_caller=credentials.restore if credentials is not None else None,
            news=leg_news,
        )
        super().__init__(
            "fastmcp_temporal.McpTasksPlugin",
            data_converter=_task_converter(encryption_key, payload_storage),
            workflows=[McpTaskWorkflow, McpToolTaskWorkflow, *workflows],
            activities=[legs.run_leg, *activities],
            workflow_runner=_passthrough,
        )

    def configure_client(self, config: ClientConfig) -> ClientConfig:
        """``SimplePlugin``'s settings; a plugin after this one that would refuse the task
        converter is named now, with the order that works, instead of failing later with
        its own words (the OpenAI Agents SDK's: "The payload converter must be of type
        OpenAIPayloadConverter.")."""
        config = super().configure_client(config)
        plugins = list(config.get("plugins") or ())
        later = plugins[plugins.index(self) + 1 :] if self in plugins else []
        for plugin in later:
            if not isinstance(plugin, SimplePlugin):
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a probe, not the client's converter
                try:
                    converter_step(plugin, config.get("data_converter"))
                except ValueError as err:
                    raise ValueError(
                        f"{plugin.name()} comes after {self.name()} and refuses its payload "
                        f"converter ({err}); put {plugin.name()} before it: "
                        f"plugins=[{plugin.name()}(), McpTasksPlugin(...)]"
                    ) from err
        return config

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """``SimplePlugin``'s settings, plus the Deployment Version it has no parameter for."""
        config = super().configure_worker(config)
        if self._versioning is not None:
            config["deployment_config"] = self._versioning.deployment_config()
        return config
