"""The server of the resilience tests, for ``fastmcp-temporal worker`` processes.

It serves the crash server's ``record_and_wait`` (each run leaves a marker
naming its task; the test decides when a leg may finish). Temporal comes from
``TEMPORAL_ADDRESS``, the queue from ``RESILIENT_TASK_QUEUE``, the key (if
any) from ``FASTMCP_TEMPORAL_ENCRYPTION_KEY``, as a deployed worker gets them
(and the repository root on ``PYTHONPATH``). ``RESILIENT_HEARTBEAT_TIMEOUT_S``
sets the heartbeat timeout of the legs of tasks this server creates: 2 s finds a
lost worker quickly; the drain tests set a long one, so that a worker starved of
CPU for a moment on a loaded machine is never taken for a lost one (a drain must
hand the leg back itself). A task keeps its creator's leg policy, so the tests'
front ends, which create the tasks, must be given the same timeout.
"""

from __future__ import annotations

import os

from fastmcp import FastMCP

from fastmcp_temporal import LegPolicy, TemporalTasks
from tests.processes.crash_server import mcp as crash_server

mcp = FastMCP("resilient")
mcp.add_extension(
    TemporalTasks(
        task_queue=os.environ["RESILIENT_TASK_QUEUE"],
        leg_policy=LegPolicy(
            heartbeat_timeout_s=float(os.environ.get("RESILIENT_HEARTBEAT_TIMEOUT_S", "2"))
        ),
    )
)
mcp.mount(crash_server)
