"""Generation 5: a local-leg task's answered leg recorded with ``activity-legs-after-input``.

The patch ``fastmcp-temporal/activity-legs-after-input`` (``workflows/local_legs.py``) is
asked only before a local-leg task's leg that follows the client's answers: that
leg runs as an activity (a marker, then ``ActivityTaskScheduled``), so a second
answer racing its end cannot cost its result. The first leg stays local. Only
``local_leg`` (a question, an answer, the result) takes it.

``sealed_caller`` records a task of an authenticated caller whose token and
headers the front end sealed (``CallerSnapshot.sealed_credentials``, the default
on an embedded Temporal): the workflow passes the sealed field on to its leg
without reading it, and the token still reaches the tool.
"""

from __future__ import annotations

import json
import tempfile

from fastmcp import FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.dependencies import get_access_token

from fastmcp_temporal.server.tasks.engine import workflow_id_for
from tests.histories.harness import Harness, Run, TaskPath, Wire
from tests.histories.paths import local_leg
from tests.ports import run_server_async
from tests.wire import RawMcp

V5 = "v5"


async def _local_leg_v5(harness: Harness) -> dict[str, Run]:
    return {f"{V5}/local_leg": run for run in (await local_leg(harness)).values()}


async def sealed_caller(harness: Harness) -> dict[str, Run]:
    token = {"client_id": "app", "sub": "ada", "scopes": ["read"]}
    mcp = FastMCP("recorder", auth=StaticTokenVerifier(tokens={"secret-token": token}))
    with tempfile.TemporaryDirectory() as key_dir:
        mcp.add_extension(harness.tasks(credentials_key_dir=key_dir))

        @mcp.tool(task=True)
        async def whoami() -> str:
            access = get_access_token()
            return access.client_id if access is not None else "nobody"

        async with run_server_async(mcp) as url:
            wire = Wire(RawMcp(url, bearer="secret-token"))
            task = await wire.start("whoami")
            done = await wire.wait_status(task, "completed")
    assert done["result"]["structuredContent"] == {"result": "app"}
    scope = json.dumps(["app", None, "ada"], separators=(",", ":"))
    return {f"{V5}/sealed_caller": Run(workflow_id_for(task, scope))}


FIFTH_GENERATION: tuple[TaskPath, ...] = (
    TaskPath(f"{V5}/local_leg", _local_leg_v5, (f"{V5}/local_leg",)),
    TaskPath(f"{V5}/sealed_caller", sealed_caller, (f"{V5}/sealed_caller",)),
)
