"""The catalogue of failures: one async tool per way a FastMCP tool body can fail.

The twin of ``tests/parity_returns.py`` (``ERRORS``, registered by ``raises``):
each failure must look the same as a task's ``failed`` or ``isError`` end as it
does on the synchronous ``tools/call``; the deliberate divergences carry their
reason, as a strict ``xfail``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from fastmcp import Context
from fastmcp.dependencies import Depends
from fastmcp.exceptions import ResourceError, ToolError, ValidationError
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY

from tests.parity_returns import CHILD, GRANDCHILD, Case, Person

ERRORS: list[Case] = []


def raises(
    arguments: dict[str, Any] | None = None,
    *,
    xfail: str | None = None,
    mount: tuple[str, ...] = (),
    **tool_options: Any,
) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Register a tool whose *failure* must look the same on both paths."""

    def register(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        ERRORS.append(Case(fn, arguments or {}, tool_options, xfail, mount=mount))
        return fn

    return register


@raises()
async def raises_tool_error() -> str:
    raise ToolError("the tool says no (verbatim, even when masking)")


@raises()
async def raises_value_error() -> str:
    raise ValueError("internal detail: db password is hunter2")


@raises()
async def raises_runtime_error_after_context(ctx: Context) -> str:
    await ctx.info("about to fail")
    raise RuntimeError("exploded midway")


@raises()
async def raises_key_error() -> dict[str, int]:
    return {}["missing"]  # type: ignore[return-value]


@raises()
async def raises_fastmcp_validation_error() -> str:
    raise ValidationError("a FastMCP ValidationError raised by the body")


@raises()
async def raises_resource_error() -> str:
    raise ResourceError("a FastMCP ResourceError raised by the body")


@raises()
async def raises_upstream_429() -> str:
    request = httpx.Request("GET", "https://api.example.com/")
    response = httpx.Response(429, request=request)
    raise httpx.HTTPStatusError("429 Too Many Requests", request=request, response=response)


@raises()
async def raises_upstream_500() -> str:
    request = httpx.Request("GET", "https://api.example.com/")
    response = httpx.Response(500, request=request)
    raise httpx.HTTPStatusError("500 Server Error", request=request, response=response)


@raises()
async def raises_upstream_timeout() -> str:
    raise httpx.ReadTimeout("upstream too slow")


@raises()
async def raises_pydantic_error_in_body() -> str:
    Person.model_validate({"name": "no age"})
    return "unreachable"


MCP_ERROR_DIVERGENCE = (
    "DELIBERATE DIVERGENCE: an MCPError raised under a tool (other than -32021) is masked into an "
    "isError result by the synchronous tools/call (FastMCP.call_tool), but the leg "
    "activity (tool_leg.py `except MCPError`) fails the task with the raw JSON-RPC error. "
    "Deliberate there (as in fastmcp_tasks): it is how conformance/server.py's "
    "protocol_error_job ends `failed`, and tests/test_wire.py::test_protocol_error_fails_"
    "the_task_with_the_json_rpc_error pins it. The parity requirement conflicts with it."
)
DEPENDENCY_FAILURE = (
    "DELIBERATE: a failing Depends() is masked into an isError result by the synchronous "
    "tools/call, but a task that cannot resolve its dependencies could not run at all, "
    "so it fails with -32603 'Failed to resolve dependency ...' (core engine issue: "
    "'a dependency-resolution failure → failed')."
)


@raises(xfail=MCP_ERROR_DIVERGENCE)
async def raises_mcp_error() -> str:
    raise MCPError(code=-32602, message="upstream said: bad params", data={"hint": "x"})


@raises()
async def raises_not_found_via_context(ctx: Context) -> str:
    await ctx.read_resource("memo://does-not-exist")  # a NotFoundError inside the body
    return "unreachable"


@raises()
async def raises_missing_client_capability() -> str:
    # The one MCPError the synchronous path does NOT mask: it stays a JSON-RPC
    # error (-32021), so the task must fail with exactly that error.
    raise MCPError(
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message="needs sampling",
        data={"requiredCapabilities": {"sampling": {}}},
    )


@raises(xfail=MCP_ERROR_DIVERGENCE, timeout=0.05)
async def raises_tool_timeout() -> str:
    # FastMCP's per-tool timeout raises MCPError(-32000) from Tool.run: the
    # same code path as raises_mcp_error.
    await asyncio.sleep(2)
    return "too late"


def _broken_dependency() -> str:
    raise LookupError("dependency backend unavailable")


@raises(xfail=DEPENDENCY_FAILURE)
async def raises_in_dependency(value: str = Depends(_broken_dependency)) -> str:
    return value


# -- tools of mounted servers ---------------------------------------------------


@raises(mount=CHILD)
async def mounted_raises_tool_error() -> str:
    raise ToolError("child says no")


@raises(mount=CHILD)
async def mounted_raises_value_error() -> str:
    raise ValueError("child internals")


@raises(mount=GRANDCHILD)
async def nested_raises_value_error() -> str:
    raise ValueError("grandchild internals")
