"""Workflow tools that call the ``peer`` connection (kept free of server set-up:
the sandbox re-imports this module)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy

from fastmcp_temporal.workflows import RemoteError, RemoteTaskError, RemoteToolError, remote

#: The product's default heartbeat timeout (``remote()``, ``LegPolicy``): the
#: harness's, so a live worker starved for a moment on a loaded machine is not taken
#: for a dead one (a retried create, a retried wait: runs and statuses a test did not
#: mean).
PATIENT_HEARTBEAT_S = 10.0
#: For a test that kills a worker: its step moves to another worker within seconds.
KILLED_WORKER_HEARTBEAT_S = 2.0


class RemoteReport(BaseModel):
    text: str = ""
    is_error: bool = False
    error_type: str | None = None
    error_message: str | None = None
    remote_task_id: str | None = None
    remote_status: str | None = None
    code: int | None = None


def _options(attempts: int, heartbeat_s: float = PATIENT_HEARTBEAT_S) -> dict[str, Any]:
    return {
        "retry": RetryPolicy(
            initial_interval=timedelta(milliseconds=100), maximum_attempts=attempts
        ),
        "heartbeat_timeout": timedelta(seconds=heartbeat_s),
        "progress_every": timedelta(seconds=1),
    }


@workflow.defn
class CallRemote:
    """Call one tool of a configured MCP server and report what came back.

    ``heartbeat_s``: the remote activities' heartbeat timeout; a test that kills the
    worker passes ``KILLED_WORKER_HEARTBEAT_S``.
    """

    @workflow.run
    async def run(
        self,
        tool: str,
        arguments: dict[str, Any],
        server: str = "peer",
        attempts: int = 5,
        catch: bool = True,
        heartbeat_s: float = PATIENT_HEARTBEAT_S,
    ) -> RemoteReport:
        options = _options(attempts, heartbeat_s)
        try:
            result = await remote(server, **options).call_tool(tool, arguments)
        except RemoteError as err:
            if not catch:
                raise
            report = RemoteReport(error_type=type(err).__name__, error_message=err.message)
            if isinstance(err, RemoteTaskError):
                report.remote_task_id, report.remote_status = err.task_id, err.status
            if isinstance(err, RemoteToolError):
                report.code = err.code
            return report
        text = " ".join(getattr(block, "text", "") for block in result.content)
        return RemoteReport(text=text, is_error=bool(result.is_error))


@workflow.defn
class FanOut:
    """Call ``tool`` once per argument set, all at once."""

    @workflow.run
    async def run(self, tool: str, calls: list[dict[str, Any]]) -> list[str]:
        peer = remote("peer", **_options(5))
        results = await asyncio.gather(*(peer.call_tool(tool, args) for args in calls))
        return [" ".join(getattr(b, "text", "") for b in r.content) for r in results]


@workflow.defn
class ListRemoteTools:
    """The names of the peer's tools."""

    @workflow.run
    async def run(self) -> list[str]:
        return sorted(tool.name for tool in await remote("peer").list_tools())


@workflow.defn
class RemoteTour:
    """Every kind of remote step once: the replay gate's recorded history.

    Lists tools, fans out three synchronous calls, follows a remote task (its
    progress relayed) and one that asks a question (relayed to our client),
    and catches a remote task's failure.
    """

    @workflow.run
    async def run(self, marker_dir: str) -> list[str]:
        peer = remote("peer", **_options(5))
        names = [tool.name for tool in await peer.list_tools()]
        echoes = await asyncio.gather(*(peer.call_tool("echo", {"text": str(i)}) for i in range(3)))
        waited, asked = await asyncio.gather(
            peer.call_tool("count_and_wait", {"marker_dir": marker_dir, "tag": "tour"}),
            peer.call_tool("ask_color", {"marker_dir": marker_dir, "tag": "tour"}),
        )
        try:
            await peer.call_tool("fail_hard", {"reason": "tour"})
            failure = "no failure"
        except RemoteTaskError as err:
            failure = err.status
        texts = [
            " ".join(getattr(b, "text", "") for b in r.content) for r in (*echoes, waited, asked)
        ]
        return [str(len(names)), *texts, failure]
