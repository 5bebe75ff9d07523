"""The front end real MCP hosts talk to in ``tests/test_hosts.py``, in its own process.

    python -m tests.processes.host_server ADDRESS QUEUE PORT WIRE_LOG worker|no-worker

Streamable HTTP on ``127.0.0.1:PORT``, ``TemporalTasks`` on the test session's
Temporal, the ``tests.processes.host_tools`` tools mounted; with ``worker`` its own
worker runs them, with ``no-worker`` a worker process does (the kill test kills
that one). Every JSON-RPC message in and out is recorded to ``WIRE_LOG``
(``tests.hosts.wire_log``). The legs' heartbeat timeout is 2 s, so a killed
worker's leg moves to another worker within seconds. Settings come from the
environment as in production (``FASTMCP_TEMPORAL_*``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from fastmcp import FastMCP
from starlette.middleware import Middleware

from fastmcp_temporal import LegPolicy, TemporalTasks
from tests.hosts.wire_log import WireLog
from tests.processes.host_tools import mcp as host_tools


def main() -> None:
    address, task_queue, port, wire_log, worker = sys.argv[1:6]
    mcp = FastMCP("host-front-end")
    mcp.add_extension(
        TemporalTasks(
            address=address,
            task_queue=task_queue,
            run_worker=worker == "worker",
            leg_policy=LegPolicy(heartbeat_timeout_s=2),
        )
    )
    mcp.mount(host_tools)
    mcp.run(
        transport="http",
        host="127.0.0.1",
        port=int(port),
        show_banner=False,
        middleware=[Middleware(WireLog, path=Path(wire_log))],
    )


if __name__ == "__main__":
    main()
