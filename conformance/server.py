"""Fixture server for the official MCP conformance suite's SEP-2663 tasks scenarios.

Serves the tools the ``tasks-*`` scenarios of ``@modelcontextprotocol/conformance``
call (see ``conformance/README.md``), over streamable HTTP on 127.0.0.1, with
``TemporalTasks`` running an embedded Temporal dev server (no Web UI) whose
data lives in a throwaway directory.

    python conformance/server.py --port 8123          # or PORT=8123
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import tempfile

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from mcp.shared.exceptions import MCPError

from fastmcp_temporal import TemporalTasks

mcp = FastMCP("fastmcp-temporal-conformance")


def _elicit(message: str, properties: dict, required: list[str]) -> mcp_types.ElicitRequest:
    return mcp_types.ElicitRequest(
        params=mcp_types.ElicitRequestFormParams(
            message=message,
            requested_schema={"type": "object", "properties": properties, "required": required},
        )
    )


def _accepted(response: object) -> dict | None:
    """The content of an accepted ``ElicitResult``, else ``None``."""
    if isinstance(response, mcp_types.ElicitResult) and response.action == "accept":
        return dict(response.content or {})
    return None


@mcp.tool(task=False)
def greet(name: str) -> str:
    """Synchronous only: greets ``name``."""
    return f"Hello, {name}!"


@mcp.tool(task=True)
async def slow_compute(seconds: float = 1.0, label: str = "job") -> str:
    """Task-capable: sleeps ``seconds`` (cancellable), then reports ``label``."""
    if seconds > 0:
        await asyncio.sleep(seconds)
    return f"{label}: done after {seconds}s"


@mcp.tool(task=TaskConfig(mode="required"))
async def failing_job() -> str:
    """Task-required: fails after ~1 s with a tool error (a completed task with isError)."""
    await asyncio.sleep(1.0)
    raise ValueError("failing_job failed on purpose")


@mcp.tool(task=True)
async def protocol_error_job() -> str:
    """Task-capable: raises a JSON-RPC error, so the task ends ``failed``."""
    await asyncio.sleep(0.2)
    raise MCPError(code=-32603, message="protocol_error_job raised a JSON-RPC error")


@mcp.tool(task=True)
async def confirm_delete(filename: str, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Task-capable guard tool: asks for confirmation, then 'deletes' ``filename``."""
    responses = ctx.input_responses or {}
    if "confirm" not in responses:
        return mcp_types.InputRequiredResult(
            input_requests={
                "confirm": _elicit(
                    f"Delete {filename}?",
                    {"confirm": {"type": "boolean", "description": "Confirm the deletion"}},
                    ["confirm"],
                )
            }
        )
    content = _accepted(responses["confirm"])
    if content is not None and content.get("confirm") in (True, "true"):
        return f"Deleted {filename}"
    return f"Kept {filename}"


@mcp.tool(task=True)
async def multi_input(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Task-capable guard tool: asks for two inputs at once (``name`` and ``confirm``)."""
    responses = ctx.input_responses or {}
    missing = {}
    if "name" not in responses:
        missing["name"] = _elicit("What is your name?", {"name": {"type": "string"}}, ["name"])
    if "confirm" not in responses:
        missing["confirm"] = _elicit(
            "Please confirm.", {"confirm": {"type": "boolean"}}, ["confirm"]
        )
    if missing:
        return mcp_types.InputRequiredResult(input_requests=missing)
    name = (_accepted(responses["name"]) or {}).get("name", "anonymous")
    confirmed = (_accepted(responses["confirm"]) or {}).get("confirm")
    return f"Hello, {name}! confirmed={confirmed}"


@mcp.tool(task=TaskConfig(mode="required"))
async def test_tool_with_task(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """MRTR then task: asks for ``user_name`` (MRTR), then does slow work with it."""
    responses = ctx.input_responses or {}
    if "user_name" not in responses:
        return mcp_types.InputRequiredResult(
            input_requests={
                "user_name": _elicit("What is your name?", {"name": {"type": "string"}}, ["name"])
            },
            request_state="awaiting-user-name",
        )
    content = _accepted(responses["user_name"]) or {}
    name = content.get("name") or content.get("user_name") or "anonymous"
    await asyncio.sleep(0.5)
    return f"Hello, {name}! Task finished."


def _exit_on_sigterm(signum: int, frame: object) -> None:
    """Turn SIGTERM into ``SystemExit`` so every lifespan unwinds.

    uvicorn traps SIGTERM while serving and, once it has shut down, re-raises
    it to the previous handler. With the default handler the process dies right
    there, before ``TemporalTasks``' lifespan exits, and the embedded Temporal
    (its own session) is orphaned. Raising ``SystemExit`` instead unwinds the
    FastMCP lifespan, which stops the worker and the dev server.
    """
    raise SystemExit(128 + signum)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8123")))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--data-dir", default=None, help="Temporal data dir (default: a temp dir)")
    args = parser.parse_args()

    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    data_dir = args.data_dir or tempfile.mkdtemp(prefix="fastmcp-temporal-conformance-")
    # test_tool_with_task resolves its MRTR round synchronously before the task
    # exists (tasks-mrtr-composition); the other guard tools ask inside the task.
    mcp.add_extension(
        TemporalTasks(
            data_dir=data_dir,
            ui=False,
            task_queue="conformance",
            mrtr_first_tools={"test_tool_with_task"},
        )
    )
    try:
        mcp.run(transport="http", host=args.host, port=args.port, path="/mcp", show_banner=False)
    finally:
        if args.data_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
