"""Running one client scenario against the peer and against ``TemporalTasks``, and comparing.

A scenario is a coroutine that gets a factory of the backend's extension,
builds its own server(s) with it, drives them with real FastMCP clients and
returns what the client observed: a list of JSON values (``tasks/get``
answers, acks, error texts, what the tool body saw). ``side_by_side`` runs it
once against ``fastmcp_tasks.TasksExtension`` (memory:// Docket, in process)
and once against ``TemporalTasks`` (the session's real Temporal) and returns
both observations with what may differ without meaning anything taken out:
task ids and input keys (minted, opaque: replaced by their order of
appearance), timestamps, ``pollIntervalMs`` (adaptive here, see
docs/differences.md) and the transport's ``serverInfo`` stamp in ``_meta``.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types
from fastmcp import Client
from fastmcp.server.extensions import ServerExtension
from mcp.shared.exceptions import MCPError

from fastmcp_temporal.client_wire import TaskState, get_task

Extension = Callable[[], ServerExtension]
Scenario = Callable[[Extension], Awaitable[list[Any]]]

#: Fields that are the clock's or the minting's, not the behaviour's.
_UNSTABLE = frozenset({"createdAt", "lastUpdatedAt", "pollIntervalMs"})
#: The transport stamps every answer with the server's name and version.
_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
TERMINAL = ("completed", "failed", "cancelled")
#: An upper bound for a task to reach a state in-process (a hang, not a speed check).
REACH_WITHIN_S = 60.0


def peer_extension(name: str) -> Extension:
    """``TasksExtension`` on its own in-memory Docket (the same one for every server built)."""
    from fastmcp_tasks import TasksExtension

    return lambda: TasksExtension(url="memory://", name=name)


async def side_by_side(scenario: Scenario, temporal: Extension) -> tuple[list[Any], list[Any]]:
    """``(peer, ours)``: what the client observed from each, normalized."""
    peer = await scenario(peer_extension(f"parity-{uuid.uuid4().hex}"))
    ours = await scenario(temporal)
    return normalized(peer), normalized(ours)


def observed(state: TaskState) -> dict[str, Any]:
    """A ``tasks/get`` answer as the wire carried it."""
    return state.model_dump(by_alias=True, mode="json", exclude_none=True)


async def get(client: Client, task_id: str) -> dict[str, Any]:
    return observed(await get_task(client.session, task_id))


async def reach(client: Client, task_id: str, *statuses: str) -> dict[str, Any]:
    """Poll ``tasks/get`` until the task is in one of ``statuses``; its last answer."""
    deadline = asyncio.get_running_loop().time() + REACH_WITHIN_S
    while True:
        state = await get(client, task_id)
        if state["status"] in statuses:
            return state
        assert asyncio.get_running_loop().time() < deadline, f"never reached {statuses}: {state}"
        await asyncio.sleep(0.02)


async def error_of(call: Awaitable[Any]) -> dict[str, Any]:
    """What a request that the server refuses answers (a JSON-RPC error, code and text)."""
    try:
        await call
    except MCPError as err:
        return {"code": err.error.code, "message": err.error.message}
    raise AssertionError("the request succeeded")


def accept(content: dict[str, Any] | None = None) -> dict[str, Any]:
    return mcp_types.ElicitResult(action="accept", content=content or {}).model_dump(
        by_alias=True, mode="json", exclude_none=True
    )


def normalized(observations: list[Any]) -> list[Any]:
    """``observations`` with minted ids, input keys and clock fields made comparable."""
    names: dict[str, str] = {}

    def name(value: str, kind: str) -> str:
        if value not in names:
            names[value] = f"<{kind} {sum(n.startswith(f'<{kind}') for n in names.values())}>"
        return names[value]

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            if "taskId" in value:
                name(value["taskId"], "task")
            out: dict[str, Any] = {}
            for key, item in value.items():
                if key in _UNSTABLE:
                    continue
                if key == "_meta" and isinstance(item, dict):
                    item = {k: v for k, v in item.items() if k != _SERVER_INFO}
                    if not item:
                        continue
                if key == "inputRequests" and isinstance(item, dict):
                    # Keys are the task's own: ours repeat across tasks, the peer's do not.
                    task = value.get("taskId")
                    out[key] = {name(f"{task}\0{k}", "ask"): walk(v) for k, v in item.items()}
                else:
                    out[key] = walk(item)
            return out
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    first = [walk(item) for item in observations]
    return [_rename(item, names) for item in first]


_TASK_ID_IN_TEXT = re.compile(r"[A-Za-z0-9_-]{16,128}")


def _rename(value: Any, names: dict[str, str]) -> Any:
    """Ids seen in any observation, replaced wherever they appear (texts included)."""
    if isinstance(value, dict):
        return {names.get(k, k): _rename(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename(item, names) for item in value]
    if isinstance(value, str):
        return _TASK_ID_IN_TEXT.sub(lambda m: names.get(m.group(0), m.group(0)), value)
    return value


def parked_key(state: dict[str, Any]) -> str:
    (key,) = state["inputRequests"]
    return key


def without_our_status_message(observations: list[Any], capability: str) -> list[Any]:
    """Our parked views name the capability the creating client lacks; the peer's say nothing.

    Checked here, then taken out so the rest compares (docs/differences.md, "statusMessage").
    """
    out = []
    for item in observations:
        if isinstance(item, dict) and item.get("status") == "input_required":
            message = item.get("statusMessage", "")
            assert f"did not declare support for ({capability})" in message, item
            item = {k: v for k, v in item.items() if k != "statusMessage"}
        out.append(item)
    return out
