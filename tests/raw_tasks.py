"""Tasks over raw JSON-RPC with bearer tokens: the servers, callers and waits tests share.

Real FastMCP servers over streamable HTTP whose tasks run on the session's
Temporal dev server, real bearer tokens (``StaticTokenVerifier``), raw JSON-RPC
(``tests.wire.RawMcp``). Used by the isolation, bad-input and caller tests, and
by the tests of quotas, idempotency, fairness, metrics and the CLI.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from tests.wire import RawMcp

BuildTasks = Callable[..., TemporalTasks]

METHODS = ("tasks/get", "tasks/update", "tasks/cancel")
#: Upper bound for a task to reach a state it is expected to reach quickly. Only a
#: failure waits this long; it is generous because a loaded CI machine (load 10 on
#: 2 cores) can take seconds for each Temporal call a leg or a read makes.
WITHIN_S = 60.0

ALICE = {"client_id": "app", "sub": "alice", "scopes": []}
#: Callers that are not alice: another user of the same client, the same user
#: name under another client, and the client itself without a user.
STRANGERS = {
    "bob": {"client_id": "app", "sub": "bob", "scopes": []},
    "alice-other-app": {"client_id": "other-app", "sub": "alice", "scopes": []},
    "app-no-sub": {"client_id": "app", "scopes": []},
}


def verifier(**extra: dict[str, Any]) -> StaticTokenVerifier:
    return StaticTokenVerifier(tokens={"alice": ALICE, **STRANGERS, **extra})


def question(key: str = "confirm", request_state: str | None = None) -> Any:
    """The guard pattern: end the leg by asking the client to confirm."""
    return mcp_types.InputRequiredResult(
        input_requests={
            key: mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message="Go ahead?", requested_schema={"type": "object", "properties": {}}
                )
            )
        },
        request_state=request_state,
    )


ACCEPT = {"action": "accept", "content": {}}


def build_server(
    extension: TemporalTasks,
    *,
    auth: StaticTokenVerifier | None = None,
    gate: asyncio.Event | None = None,
) -> FastMCP:
    """Three task tools: one that runs until ``gate`` opens, one that asks, one that ends."""
    mcp = FastMCP("isolation", auth=auth)
    mcp.add_extension(extension)
    gate = gate or asyncio.Event()

    @mcp.tool(task=True)
    async def hold() -> str:
        await asyncio.wait_for(gate.wait(), 30)
        return "released"

    @mcp.tool(task=True)
    async def confirm(ctx: Context) -> str:
        return question() if not ctx.input_responses else "confirmed"

    @mcp.tool(task=True)
    async def done(data: str = "") -> str:
        return f"finished ({len(data)} chars)"

    return mcp


async def create(raw: RawMcp, tool: str, arguments: dict[str, Any] | None = None) -> str:
    result = await raw.result("tools/call", {"name": tool, "arguments": arguments or {}})
    assert result["resultType"] == "task", result
    return result["taskId"]


async def wait_for(raw: RawMcp, task_id: str, *statuses: str) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WITHIN_S
    while True:
        task = await raw.result("tasks/get", {"taskId": task_id})
        if task["status"] in statuses:
            return task
        assert loop.time() < deadline, f"never reached {statuses}: {task}"
        await asyncio.sleep(0.05)


def unknown_id() -> str:
    """An id of the same shape as a real one (32 URL-safe characters) that names nothing."""
    return secrets.token_urlsafe(24)


def without(error: dict[str, Any], task_id: str) -> dict[str, Any]:
    """The error object with the echoed task id replaced by a placeholder."""
    return json.loads(json.dumps(error).replace(task_id, "<id>"))


def assert_clean(body: dict[str, Any]) -> None:
    text = json.dumps(body)
    assert "Traceback" not in text and 'File "' not in text, text


async def assert_invisible(caller: RawMcp, task_id: str, outstanding_key: str) -> None:
    """``caller`` gets, for ``task_id``, byte for byte the error of an id that names nothing.

    The update carries a valid answer for the task's real outstanding key: the
    most tempting request a stranger could make.
    """
    for method in METHODS:
        stranger_id = unknown_id()

        def params(tid: str, method: str = method) -> dict[str, Any]:
            if method == "tasks/update":
                return {"taskId": tid, "inputResponses": {outstanding_key: ACCEPT}}
            return {"taskId": tid}

        stolen_status, stolen = await caller.call(method, params(task_id))
        unknown_status, unknown = await caller.call(method, params(stranger_id))
        assert unknown.get("error", {}).get("code") == -32602, unknown
        assert "error" in stolen, f"{method} on another scope's task answered {stolen}"
        assert without(stolen["error"], task_id) == without(unknown["error"], stranger_id)
        assert stolen_status == unknown_status
        assert_clean(stolen)


@dataclass
class Owned:
    """One owner's tasks, and what the owner saw of them before anyone else tried."""

    owner: RawMcp
    running: str
    parked: str
    finished: str
    parked_view: dict[str, Any]
    finished_view: dict[str, Any]

    @property
    def key(self) -> str:
        (key,) = self.parked_view["inputRequests"]
        return key

    async def assert_untouched(self) -> None:
        running = await self.owner.result("tasks/get", {"taskId": self.running})
        assert running["status"] == "working", running
        parked = await self.owner.result("tasks/get", {"taskId": self.parked})
        assert parked["status"] == "input_required"
        assert parked["inputRequests"] == self.parked_view["inputRequests"]
        assert parked["lastUpdatedAt"] == self.parked_view["lastUpdatedAt"]
        finished = await self.owner.result("tasks/get", {"taskId": self.finished})
        assert finished == self.finished_view


async def assert_all_invisible(callers: list[RawMcp], owned: Owned) -> None:
    """Every caller, on each of the owner's tasks, concurrently (strangers change nothing)."""
    await asyncio.gather(
        *(
            assert_invisible(caller, task_id, owned.key)
            for caller in callers
            for task_id in (owned.running, owned.parked, owned.finished)
        )
    )


async def parked_and_finished(owner: RawMcp) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    parked, finished = await create(owner, "confirm"), await create(owner, "done")
    parked_view = await wait_for(owner, parked, "input_required")
    finished_view = await wait_for(owner, finished, "completed")
    return parked, finished, parked_view, finished_view


async def workflow_ids_on(
    temporal_client: TemporalClient, task_queue: str, expected: str
) -> list[str]:
    """The workflows on ``task_queue`` once the one for ``expected`` is visible."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WITHIN_S
    query = f"TaskQueue = '{task_queue}'"
    while True:
        ids = [w.id async for w in temporal_client.list_workflows(query)]
        if any(workflow_id.endswith(expected) for workflow_id in ids) or loop.time() > deadline:
            return ids
        await asyncio.sleep(0.1)
