"""The one start-up line: where this server's tasks go, shown with no logging set up.

```
fastmcp-temporal: embedded Temporal at 127.0.0.1:7233, Web UI http://127.0.0.1:8233
(data .fastmcp-temporal); task queue 'mcp-tasks-demo', payloads not encrypted, worker
in this process; try: TEMPORAL_ADDRESS=127.0.0.1:7233 temporal workflow list
```

A FastMCP quick start configures no logging, so a line at INFO on one of our
own loggers reaches no handler and is dropped: the user never learns where the
embedded Temporal and its Web UI are. FastMCP shows its own "Starting MCP
server" line by logging under the ``fastmcp`` logger, which it sets up at
import (a rich handler on stderr, ``FASTMCP_LOG_LEVEL``, off with
``FASTMCP_LOG_ENABLED=false``); this line goes through the same public
``fastmcp.utilities.logging.get_logger``, so it shows where FastMCP's lines
show and follows the same settings. The rest of the package logs on its own
``fastmcp_temporal.*`` loggers, left to the application.

Once per process for each distinct line: a lifespan entered again (tests, a
reload) on the same Temporal and queue says nothing new.
"""

from __future__ import annotations

from fastmcp.utilities.logging import get_logger
from temporalio.client import Client

from fastmcp_temporal.server.core.codec import AesGcmCodec
from fastmcp_temporal.server.core.credentials import CredentialPolicy
from fastmcp_temporal.server.embedded.shared import EmbeddedServer

logger = get_logger(__name__)
_announced: set[str] = set()


def startup_line(
    client: Client,
    dev_server: EmbeddedServer | None,
    *,
    task_queue: str,
    run_worker: bool,
    worker_only: bool,
    credentials: CredentialPolicy,
) -> str:
    """Where Temporal is, the queue, whether payloads (or only callers' credentials) are
    encrypted, whether a worker runs here."""
    if dev_server is not None:
        where = dev_server.where()
    else:
        where = f"Temporal at {client.service_client.config.target_host}"
    codec = client.data_converter.payload_codec
    if isinstance(codec, AesGcmCodec):
        sealed = "payloads encrypted" if codec.encrypts else "payloads not encrypted"
    elif codec is None:
        sealed = "payloads not encrypted"
    else:
        sealed = f"payloads through {type(codec).__name__}"
    if credentials.seal is not None:
        sealed += " (callers' credentials sealed)"
    if worker_only:
        worker = "worker only (no MCP requests)"
    elif run_worker:
        worker = "worker in this process"
    else:
        worker = "no worker in this process (legs run on `fastmcp-temporal worker`)"
    line = (
        f"fastmcp-temporal: {where}, namespace {client.namespace!r}; "
        f"task queue {task_queue!r}, {sealed}, {worker}"
    )
    return f"{line}; try: {dev_server.try_command()}" if dev_server is not None else line


def announce(line: str) -> None:
    """Log ``line`` at INFO on FastMCP's logger, unless this process already did."""
    if line in _announced:
        return
    _announced.add(line)
    logger.info(line)
