"""Where Temporal is, configured the Temporal way.

```bash
export TEMPORAL_ADDRESS=my-ns.a1b2c.tmprl.cloud:7233 TEMPORAL_NAMESPACE=my-ns.a1b2c
export TEMPORAL_API_KEY=...            # Temporal Cloud with an API key (TLS implied)
# or mTLS: TEMPORAL_TLS_CLIENT_CERT_PATH=... TEMPORAL_TLS_CLIENT_KEY_PATH=...
# or a profile in temporal.toml: TEMPORAL_PROFILE=prod (TEMPORAL_CONFIG_FILE=...)
```

``temporalio.envconfig`` reads the same variables and ``temporal.toml``
profiles as the ``temporal`` CLI and every Temporal SDK, so a platform team
configures fastmcp-temporal like any other Temporal application. Arguments of
``TemporalTasks(...)`` or of the ``fastmcp-temporal`` command override them
field by field. With no address anywhere, every process joins the embedded dev
server of its data directory (see ``embedded``); only the extension may start
it -- workers and the ``tasks`` command refuse when none is running.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from temporalio.client import Client, Plugin
from temporalio.converter import DataConverter
from temporalio.envconfig import ClientConfigProfile
from temporalio.runtime import Runtime
from temporalio.service import TLSConfig

from fastmcp_temporal.server.embedded import shared
from fastmcp_temporal.server.embedded.shared import EmbeddedServer

DEFAULT_NAMESPACE = "default"
_OS_MESSAGE = re.compile(r'message: "([^"]+)"')


@dataclass(frozen=True)
class ConnectionSettings:
    """What ``Client.connect`` needs; ``address`` None means "none configured"."""

    address: str | None = None
    namespace: str = DEFAULT_NAMESPACE
    api_key: str | None = None
    tls: bool | TLSConfig = False
    rpc_metadata: Mapping[str, str] = field(default_factory=dict)

    def for_embedded(self, address: str) -> ConnectionSettings:
        """The embedded dev server: plaintext, no credentials."""
        return replace(self, address=address, api_key=None, tls=False, rpc_metadata={})

    def describe(self) -> str:
        """For logs and errors: never the API key."""
        auth = "API key" if self.api_key else ("mTLS/TLS" if self.tls else "plaintext")
        return f"{self.address} (namespace {self.namespace!r}, {auth})"


def resolve(
    *,
    address: str | None = None,
    namespace: str | None = None,
    api_key: str | None = None,
    tls: bool | TLSConfig | None = None,
    profile: str | None = None,
    config_file: str | Path | None = None,
) -> ConnectionSettings:
    """Environment and ``temporal.toml`` (via ``envconfig``), then these overrides."""
    loaded = ClientConfigProfile.load(
        profile=profile,
        config_source=Path(config_file) if config_file is not None else None,
    ).to_client_connect_config()
    settings = ConnectionSettings(
        address=loaded.get("target_host"),
        namespace=loaded.get("namespace") or DEFAULT_NAMESPACE,
        api_key=loaded.get("api_key"),
        tls=loaded.get("tls", False),
        rpc_metadata=dict(loaded.get("rpc_metadata") or {}),
    )
    overrides: dict[str, Any] = {}
    if address is not None:
        overrides["address"] = address
    if namespace is not None:
        overrides["namespace"] = namespace
    if api_key is not None:
        overrides["api_key"] = api_key
        overrides["tls"] = settings.tls or True  # Temporal Cloud API keys need TLS
    if tls is not None:
        overrides["tls"] = tls
    return replace(settings, **overrides)


async def connect(
    settings: ConnectionSettings,
    *,
    data_converter: DataConverter,
    plugins: Sequence[Plugin] = (),
    runtime: Runtime | None = None,
) -> Client:
    """``runtime``: the Temporal runtime (metrics exporter) of the client and its workers."""
    if settings.address is None:
        raise ValueError(
            "No Temporal address: set TEMPORAL_ADDRESS (or a temporal.toml profile) "
            "or pass --address"
        )
    try:
        return await Client.connect(
            settings.address,
            namespace=settings.namespace,
            api_key=settings.api_key,
            tls=settings.tls,
            rpc_metadata=dict(settings.rpc_metadata),
            data_converter=data_converter,
            plugins=list(plugins),
            runtime=runtime,
        )
    except RuntimeError as err:  # temporalio's "Failed client connect: <transport error>"
        reason = _OS_MESSAGE.search(str(err))
        detail = reason.group(1) if reason else str(err)
        where = settings.describe()
        raise TemporalUnreachable(f"Cannot reach Temporal at {where}: {detail}") from err


class TemporalUnreachable(ConnectionError):
    """``Client.connect`` failed: the address is wrong, or nothing listens there."""


async def connect_or_join(
    stack: contextlib.AsyncExitStack,
    settings: ConnectionSettings,
    *,
    data_dir: str | Path | None,
    start: bool,
    ui: bool = True,
    data_converter: DataConverter,
    plugins: Sequence[Plugin] = (),
    runtime: Runtime | None = None,
) -> tuple[Client, EmbeddedServer | None]:
    """Connect to the configured address, else join the data directory's embedded server.

    Joining holds a share of the embedded server until ``stack`` closes; only
    ``start=True`` (the extension) may start it. Saying where it is, is the
    extension's start-up line (``server.extension.startup_line``), so the
    ``tasks`` command keeps its output to the answer.
    """
    server: EmbeddedServer | None = None
    if settings.address is None:
        lease = await shared.join(data_dir, start=start, ui=ui, namespace=settings.namespace)
        stack.callback(lease.release)
        if start:  # a process that may start the server restarts it if its keeper dies
            watchdog = asyncio.create_task(lease.keep_alive(ui=ui, namespace=settings.namespace))
            stack.callback(watchdog.cancel)
        server = lease.server
        if settings.namespace not in (server.namespace, DEFAULT_NAMESPACE):
            served = " and ".join(repr(n) for n in sorted({server.namespace, DEFAULT_NAMESPACE}))
            raise ValueError(
                f"The embedded Temporal in {server.data_dir} serves {served}, not "
                f"{settings.namespace!r}: use the namespace of the process that started "
                "it, or another data directory"
            )
        settings = settings.for_embedded(server.address)
    client = await connect(
        settings, data_converter=data_converter, plugins=plugins, runtime=runtime
    )
    return client, server


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--address/--namespace/--profile/--config-file``; credentials stay in the environment."""
    group = parser.add_argument_group(
        "Temporal", "default: TEMPORAL_* variables and temporal.toml (temporalio.envconfig)"
    )
    group.add_argument("--address", help="Temporal frontend host:port (TEMPORAL_ADDRESS)")
    group.add_argument("--namespace", help="Temporal namespace (TEMPORAL_NAMESPACE)")
    group.add_argument("--profile", help="profile in temporal.toml (TEMPORAL_PROFILE)")
    group.add_argument("--config-file", help="temporal.toml to read (TEMPORAL_CONFIG_FILE)")
    group.add_argument(
        "--data-dir",
        help="without an address: join the embedded Temporal of this data directory "
        "(FASTMCP_TEMPORAL_DATA_DIR, default .fastmcp-temporal)",
    )


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    """The ``resolve`` keyword arguments ``add_arguments`` collected."""
    return {
        "address": args.address,
        "namespace": args.namespace,
        "profile": args.profile,
        "config_file": args.config_file,
    }


def exit_now(code: int) -> int:
    """End a CLI process here, skipping interpreter finalization.

    temporalio 1.35 can crash while the interpreter finalizes after a client
    was used (``PyGILState_Release``, temporalio/sdk-python#300): an operator's
    ``tasks list`` or a worker's clean SIGTERM must not exit with a core dump.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a closed pipe has nothing left to flush to
            stream.flush()
    os._exit(code)
