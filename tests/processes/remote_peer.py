"""The *remote* MCP server of the remote-call tests, in its own process over HTTP.

    python -m tests.processes.remote_peer --kind ours|peer --port P --token T \
        [--address A --task-queue Q]

``ours``: a ``TemporalTasks`` server (with its own worker) on the test's
Temporal; ``peer``: the ``fastmcp-tasks`` reference on ``memory://``. Both
require the bearer token ``T`` and serve the same tools; the task tools record
every run of their bodies in ``marker_dir`` (the exactly-once evidence).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from mcp.shared.exceptions import MCPError

from tests.processes.remote_workflows import PATIENT_HEARTBEAT_S

READY = "remote peer ready"


def _log(marker_dir: str, name: str, line: str) -> None:
    with (Path(marker_dir) / name).open("a") as out:
        out.write(line + "\n")


async def _count_and_wait(marker_dir: str, tag: str, ctx: Context) -> str:
    _log(marker_dir, f"runs-{tag}.log", "run")
    await ctx.report_progress(1, 2, f"{tag} is waiting")
    try:
        while not (Path(marker_dir) / f"release-{tag}").exists():
            await asyncio.sleep(0.05)
    except asyncio.CancelledError:
        _log(marker_dir, f"cancelled-{tag}.log", "cancelled")
        raise
    return f"{tag} done"


def add_tools(mcp: FastMCP) -> None:
    @mcp.tool(task=True)
    async def count_and_wait(marker_dir: str, tag: str, ctx: Context) -> str:
        """Record a run, report progress, wait for ``release-<tag>``."""
        return await _count_and_wait(marker_dir, tag, ctx)

    @mcp.tool(task=True)
    async def slow_to_start(marker_dir: str, tag: str, ctx: Context) -> str:
        """``count_and_wait``, whose ``tools/call`` is held until ``start-<tag>`` exists."""
        return await _count_and_wait(marker_dir, tag, ctx)

    @mcp.tool(task=True)
    async def ask_color(marker_dir: str, tag: str, ctx: Context) -> str:
        """Ask for a colour (guard pattern); record each answer received."""
        answer = (ctx.input_responses or {}).get("color")
        if not isinstance(answer, mcp_types.ElicitResult) or not answer.content:
            return mcp_types.InputRequiredResult(  # type: ignore[return-value]
                input_requests={
                    "color": mcp_types.ElicitRequest(
                        params=mcp_types.ElicitRequestFormParams(
                            message=f"Favourite colour for {tag}?",
                            requested_schema={
                                "type": "object",
                                "properties": {"value": {"type": "string"}},
                            },
                        )
                    )
                }
            )
        color = str(answer.content["value"])
        _log(marker_dir, f"answers-{tag}.log", color)
        return f"{tag}: {color}"

    @mcp.tool(task=True)
    async def fail_hard(reason: str) -> str:
        """Fail the task itself (not an ``isError`` result)."""
        raise MCPError(-32000, f"disk on fire: {reason}")

    @mcp.tool
    def echo(text: str) -> str:
        """A synchronous tool."""
        return f"echo: {text}"

    @mcp.tool
    def oops(text: str) -> str:
        """A synchronous tool that answers ``isError``."""
        raise ToolError(f"oops: {text}")


class RefuseWidgets(Middleware):
    """``tools/call bad_widget`` is answered with a JSON-RPC error (a protocol error);
    ``tools/call slow_to_start`` is held (``asked-<tag>.log``) until ``start-<tag>``
    exists -- a create that is still in flight when the test cancels."""

    async def on_call_tool(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if context.message.name == "bad_widget":
            raise MCPError(-32602, "bad widget")
        if context.message.name == "slow_to_start":
            arguments = context.message.arguments or {}
            marker_dir, tag = str(arguments["marker_dir"]), str(arguments["tag"])
            _log(marker_dir, f"asked-{tag}.log", "asked")
            while not (Path(marker_dir) / f"start-{tag}").exists():
                await asyncio.sleep(0.05)
        return await call_next(context)


def build(
    kind: str,
    token: str | None,
    address: str | None,
    task_queue: str | None,
    *,
    name: str,
    heartbeat_timeout_s: float = PATIENT_HEARTBEAT_S,
) -> FastMCP:
    """The remote: ``ours`` (``TemporalTasks``) or the ``peer`` (``fastmcp-tasks``), with
    this module's tools; behind a bearer ``token`` if given (HTTP; stdio has none).
    ``heartbeat_timeout_s``: of our legs (``KILLED_WORKER_HEARTBEAT_S`` where a test kills
    the remote, so its leg moves on quickly)."""
    auth = (
        StaticTokenVerifier(tokens={token: {"client_id": "orchestrator", "sub": "o1"}})
        if token
        else None
    )
    mcp = FastMCP(f"{name}-{kind}", auth=auth)
    if kind == "ours":
        from fastmcp_temporal import LegPolicy, TemporalTasks

        mcp.add_extension(
            TemporalTasks(
                address=address,
                task_queue=task_queue,
                ui=False,
                leg_policy=LegPolicy(heartbeat_timeout_s=heartbeat_timeout_s),
            )
        )
    else:
        from fastmcp_tasks import TasksExtension

        mcp.add_extension(TasksExtension(url="memory://"))
    add_tools(mcp)
    mcp.add_middleware(RefuseWidgets())
    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=["ours", "peer"], required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--address")
    parser.add_argument("--task-queue")
    parser.add_argument("--heartbeat-timeout", type=float, default=PATIENT_HEARTBEAT_S)
    args = parser.parse_args()
    mcp = build(
        args.kind,
        args.token,
        args.address,
        args.task_queue,
        name="remote",
        heartbeat_timeout_s=args.heartbeat_timeout,
    )
    print(READY, flush=True)
    mcp.run(transport="http", host="127.0.0.1", port=args.port, show_banner=False)


if __name__ == "__main__":
    main()
