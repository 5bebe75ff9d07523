"""Result parity: a task's inlined result is the synchronous ``tools/call`` result.

SEP-2663 says the ``result`` of a ``completed`` task is "the CallToolResult the
``tools/call`` would have returned". This file proves it on the raw wire for
every kind of value a FastMCP tool can return, and for every way a tool body
can fail:

* Every tool in the catalogue below is registered once, ``TaskConfig(mode=
  "optional")``, on a real FastMCP server with ``TemporalTasks``, served over
  streamable HTTP on 127.0.0.1.
* Each case calls the tool twice with raw JSON-RPC (``httpx``, the stateless
  2026-07-28 wire): once *without* the tasks extension in
  ``clientCapabilities`` (the synchronous ``tools/call``) and once *with* it
  (a task, polled with ``tasks/get`` until it is terminal).
* The synchronous response's ``result`` must equal the final ``tasks/get``'s
  ``result`` byte for byte: both are cut as raw slices out of the HTTP bodies
  (``_member``), never re-encoded. The only bytes removed are the transport's
  ``serverInfo`` stamp (see ``_without_envelope_stamp`` for why). A synchronous
  JSON-RPC *error* must likewise reappear verbatim as the ``error`` of a
  ``failed`` task.

Using one optional tool for both calls (rather than ``x_sync``/``x_task``
twins) matters: masked error texts and ``Unknown tool`` messages contain the
tool's name, so twins could never be byte-identical.

Cases where the task deliberately differs (a protocol fault fails the task)
stay here marked ``xfail(strict=True)`` with the reason, so any change in that
behaviour shows up at once. Results past Temporal's 2 MB payload limit (a 2.2,
a 10 and a 4 MB result) travel through the external payload store.
"""

from __future__ import annotations

import asyncio
import base64
import enum
import itertools
import json
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Annotated, Any, Literal

import httpx
import mcp_types
import pytest
from fastmcp import Context, FastMCP
from fastmcp.dependencies import Depends
from fastmcp.exceptions import ResourceError, ToolError, ValidationError
from fastmcp.tools import ToolResult
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID, TaskConfig
from fastmcp.utilities.types import Audio, File, Image
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY
from pydantic import BaseModel, Field
from temporalio.client import Client as TemporalClient
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from fastmcp_temporal import TemporalTasks
from tests.ports import run_server_async

pytestmark = [
    # ctx.info() in two tools: FastMCP warns that logging is deprecated at 2026-07-28.
    pytest.mark.filterwarnings("ignore:The logging capability is deprecated"),
    # returns_value_violating_its_annotation: pydantic warns while serializing it.
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]

PROTOCOL = "2026-07-28"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
OPTIONAL = TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=50))
TASK_DEADLINE_S = 60.0  # a bound on a failure only: a loaded machine runs tasks slowly

# A few fixed binary payloads (a 1x1 PNG, a few WAV-ish bytes, non-UTF-8 data).
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAHnOcQAAAAABJRU5ErkJggg=="
)
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00"
NOT_UTF8 = b"\xff\xfe\x00\x81binary"


# =============================================================================
# The catalogue: one async tool per return type / failure mode
# =============================================================================


@dataclass
class Case:
    """One tool of the catalogue and how to call it."""

    fn: Callable[..., Awaitable[Any]]
    arguments: dict[str, Any]
    tool_options: dict[str, Any]
    xfail: str | None = None
    #: Where the tool lives: () on the server itself, else the namespaces of
    #: the chain of mounted servers that lead to it (see ``_build_server``).
    mount: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The name the client calls."""
        return "_".join((*self.mount, self.fn.__name__))


RETURNS: list[Case] = []
ERRORS: list[Case] = []


def returns(
    arguments: dict[str, Any] | None = None,
    *,
    xfail: str | None = None,
    mount: tuple[str, ...] = (),
    **tool_options: Any,
) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Register a tool whose *return value* must survive the task path intact."""

    def register(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        RETURNS.append(Case(fn, arguments or {}, tool_options, xfail, mount=mount))
        return fn

    return register


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


# -- primitives ---------------------------------------------------------------


@returns({"text": 'Grüße, 世界 — 🚀 "quoted" \\ back\nslash\t\u0000'})
async def returns_str(text: str) -> str:
    return text


@returns()
async def returns_large_str() -> str:
    # 1.1 MB of (seeded, so repeatable, and barely compressible) text; the result
    # carries it twice: text block + structuredContent.
    return base64.b64encode(random.Random(2663).randbytes(825_000)).decode()


@returns()
async def returns_5_mb_str() -> str:
    # Past Temporal's 2 MB limit: the 10 MB result goes to the payload store.
    return base64.b64encode(random.Random(5).randbytes(3_750_000)).decode()


@returns({"text": ""})
async def returns_empty_str(text: str) -> str:
    return text


@returns()
async def returns_int() -> int:
    return 2**63 + 1  # beyond int64 and float precision


@returns()
async def returns_negative_int() -> int:
    return -42


@returns()
async def returns_float() -> float:
    return 0.1 + 0.2  # 0.30000000000000004: every digit must survive


@returns()
async def returns_integral_float() -> float:
    return 3.0  # must stay 3.0, not become 3


@returns()
async def returns_tiny_float() -> float:
    return 1.5e-300


@returns()
async def returns_non_finite_floats() -> list[float]:
    return [float("inf"), float("-inf"), float("nan")]


@returns()
async def returns_bool() -> bool:
    return True


@returns()
async def returns_false() -> bool:
    return False


@returns()
async def returns_none() -> None:
    return None


@returns()
async def returns_unannotated():  # type: ignore[no-untyped-def]
    return {"no": "annotation"}


@returns()
async def returns_any() -> Any:
    return [1, "two", 3.0, None]


@returns()
async def returns_optional_none() -> int | None:
    return None


@returns()
async def returns_union() -> int | str:
    return "a string this time"


@returns()
async def returns_literal() -> Literal["red", "green"]:
    return "green"


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@returns()
async def returns_enum() -> Color:
    return Color.RED


@returns()
async def returns_datetime() -> datetime:
    return datetime(2026, 7, 28, 12, 30, 45, 123456, tzinfo=UTC)


@returns()
async def returns_date() -> date:
    return date(2026, 7, 28)


@returns()
async def returns_uuid() -> uuid.UUID:
    return uuid.UUID("12345678-1234-5678-1234-567812345678")


@returns()
async def returns_decimal() -> Decimal:
    return Decimal("3.14159265358979323846264338327950288")


@returns()
async def returns_bytes_utf8() -> bytes:
    return "bytes → text".encode()


@returns()
async def returns_bytes_binary() -> bytes:
    return NOT_UTF8  # not UTF-8: base64 text


# -- containers ---------------------------------------------------------------


@returns({"payload": {"nested": {"list": [1, 2.5, "x", None, True], "empty": {}}, "n": 1}})
async def returns_dict(payload: dict[str, Any]) -> dict[str, Any]:
    return payload


@returns()
async def returns_empty_dict() -> dict[str, int]:
    return {}


@returns()
async def returns_list_of_int() -> list[int]:
    return [3, 1, 2]


@returns()
async def returns_list_of_str() -> list[str]:
    return ["a", "b", "ç"]


@returns()
async def returns_empty_list() -> list[int]:
    return []


@returns()
async def returns_tuple() -> tuple[int, str, bool]:
    return (1, "two", False)


@returns()
async def returns_set() -> set[int]:
    return {7}


@returns()
async def returns_dict_with_int_keys() -> dict[int, str]:
    return {1: "one", 2: "two"}


# -- structured types -----------------------------------------------------------


class Address(BaseModel):
    street: str
    zip_code: str = Field(alias="zipCode")


class Person(BaseModel):
    name: str
    age: int
    score: float
    tags: list[str] = []
    address: Address | None = None
    nickname: str | None = None  # None: must stay present (or absent) identically


@returns()
async def returns_pydantic_model() -> Person:
    return Person(
        name="Ada",
        age=36,
        score=99.5,
        tags=["math"],
        address=Address(street="1 Loop", zipCode="0x2A"),
    )


@returns()
async def returns_list_of_models() -> list[Person]:
    return [Person(name="A", age=1, score=1.0), Person(name="B", age=2, score=2.25)]


@dataclass
class Point:
    x: float
    y: float
    label: str = "origin"
    extra: list[int] = field(default_factory=list)


@returns()
async def returns_dataclass() -> Point:
    return Point(x=0.0, y=-1.5, extra=[1])


class Movie(TypedDict):
    title: str
    year: int


@returns()
async def returns_typed_dict() -> Movie:
    return Movie(title="Metropolis", year=1927)


@returns()
async def returns_annotated_int() -> Annotated[int, Field(description="The answer", ge=0)]:
    return 42


@returns()
async def returns_annotated_model() -> Annotated[Person, Field(description="A person")]:
    return Person(name="Grace", age=85, score=100.0)


@returns(output_schema=None)
async def returns_dict_without_output_schema() -> dict[str, int]:
    return {"structured": 0}  # output_schema=None: text content only


@returns(
    output_schema={
        "type": "object",
        "properties": {"total": {"type": "number"}, "unit": {"type": "string"}},
        "required": ["total"],
    }
)
async def returns_with_explicit_output_schema() -> dict[str, Any]:
    return {"total": 12.5, "unit": "kg"}


@returns()
async def returns_value_violating_its_annotation() -> Annotated[int, Field(ge=0)]:
    return "not an int"  # type: ignore[return-value]  # FastMCP sends it anyway


# -- FastMCP media helpers --------------------------------------------------------


@returns()
async def returns_image_helper() -> Image:
    return Image(data=PNG, format="png")


@returns()
async def returns_3_mb_image_helper() -> Image:
    # 3 MB of binary, 4 MB as base64 in an ImageContent block.
    return Image(data=PNG + random.Random(3).randbytes(3_000_000), format="png")


@returns()
async def returns_audio_helper() -> Audio:
    return Audio(data=WAV, format="wav")


@returns()
async def returns_file_helper_text() -> File:
    return File(data=b"a,b\n1,2\n", format="csv", name="table")


@returns()
async def returns_file_helper_binary() -> File:
    return File(data=NOT_UTF8, format="bin", name="blob")


@returns()
async def returns_list_of_helpers() -> list[Image | Audio]:
    return [Image(data=PNG, format="png"), Audio(data=WAV, format="wav")]


# -- MCP content blocks ------------------------------------------------------------


@returns()
async def returns_text_content() -> mcp_types.TextContent:
    return mcp_types.TextContent(
        type="text",
        text="annotated",
        annotations=mcp_types.Annotations(audience=["user"], priority=0.25),
        _meta={"com.example/block": {"k": [1, 2]}},
    )


@returns()
async def returns_image_content() -> mcp_types.ImageContent:
    return mcp_types.ImageContent(
        type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"
    )


@returns()
async def returns_audio_content() -> mcp_types.AudioContent:
    return mcp_types.AudioContent(
        type="audio", data=base64.b64encode(WAV).decode(), mime_type="audio/wav"
    )


@returns()
async def returns_resource_link() -> mcp_types.ResourceLink:
    return mcp_types.ResourceLink(
        type="resource_link",
        uri="file:///reports/q3.pdf",
        name="q3",
        title="Q3 report",
        mime_type="application/pdf",
        size=1234,
    )


@returns()
async def returns_embedded_text_resource() -> mcp_types.EmbeddedResource:
    return mcp_types.EmbeddedResource(
        type="resource",
        resource=mcp_types.TextResourceContents(
            uri="memo://notes/1", mime_type="text/markdown", text="# Title\n\nbody"
        ),
    )


@returns()
async def returns_embedded_blob_resource() -> mcp_types.EmbeddedResource:
    return mcp_types.EmbeddedResource(
        type="resource",
        resource=mcp_types.BlobResourceContents(
            uri="memo://blobs/1",
            mime_type="application/octet-stream",
            blob=base64.b64encode(NOT_UTF8).decode(),
        ),
        annotations=mcp_types.Annotations(priority=1.0),
    )


@returns()
async def returns_list_of_content_blocks() -> list[mcp_types.ContentBlock]:
    return [
        mcp_types.TextContent(type="text", text="first"),
        mcp_types.ImageContent(
            type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"
        ),
    ]


@returns()
async def returns_mixed_content_and_values() -> list[Any]:
    # Content blocks, helpers and plain values in one list: each plain value
    # becomes its own text block.
    return [
        "plain text",
        mcp_types.TextContent(type="text", text="a block"),
        Image(data=PNG, format="png"),
        {"a": 1},
        7,
    ]


@returns()
async def returns_list_of_plain_values() -> list[Any]:
    return ["a", 1, {"b": 2.0}]  # no content block: one aggregated text block


# -- ToolResult / CallToolResult ----------------------------------------------------


@returns()
async def returns_tool_result_with_structured_and_meta() -> ToolResult:
    return ToolResult(
        content=[mcp_types.TextContent(type="text", text="summary")],
        structured_content={"rows": 3, "ratio": 0.5},
        meta={"com.example/trace": "abc", "nested": {"n": [1]}},
    )


@returns()
async def returns_tool_result_content_only() -> ToolResult:
    return ToolResult(content="just text")


@returns()
async def returns_tool_result_structured_only() -> ToolResult:
    return ToolResult(structured_content={"only": "structured"})


@returns()
async def returns_tool_result_is_error() -> ToolResult:
    return ToolResult(content="reported failure", is_error=True, meta={"why": "because"})


@returns()
async def returns_call_tool_result() -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="raw protocol result")],
        structured_content={"raw": True},
        is_error=False,
        _meta={"com.example/raw": 1},
    )


@returns()
async def returns_call_tool_result_error() -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="raw error")], is_error=True
    )


# -- the Context does not change what comes back ----------------------------------


@returns({"n": 3})
async def returns_after_using_context(n: int, ctx: Context) -> dict[str, Any]:
    await ctx.info("working")
    await ctx.report_progress(1, 2, "halfway")
    return {"n": n, "server": ctx.fastmcp.name.removesuffix("-masked")}


# =============================================================================
# Errors raised by the tool body
# =============================================================================


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


# =============================================================================
# Tools of mounted servers: a child mounted as ``child``, and a grandchild
# mounted on the child as ``inner`` (called ``child_<name>``, ``child_inner_<name>``)
# =============================================================================

CHILD = ("child",)
GRANDCHILD = ("child", "inner")


@returns(mount=CHILD)
async def mounted_returns_model() -> Person:
    return Person(name="Mounted", age=1, score=0.5)


@returns(mount=CHILD)
async def mounted_returns_tool_result() -> ToolResult:
    return ToolResult(content="from the child", structured_content={"k": 1}, meta={"m": True})


@raises(mount=CHILD)
async def mounted_raises_tool_error() -> str:
    raise ToolError("child says no")


@raises(mount=CHILD)
async def mounted_raises_value_error() -> str:
    raise ValueError("child internals")


@returns(mount=GRANDCHILD)
async def nested_returns_dataclass() -> Point:
    return Point(x=1.0, y=2.0, label="deep")


@raises(mount=GRANDCHILD)
async def nested_raises_value_error() -> str:
    raise ValueError("grandchild internals")


# =============================================================================
# Server and raw wire
# =============================================================================


def _build_server(name: str, mask: bool) -> FastMCP:
    mcp = FastMCP(name, mask_error_details=mask)
    child = FastMCP(f"{name}-child", mask_error_details=mask)
    grandchild = FastMCP(f"{name}-grandchild", mask_error_details=mask)
    homes = {(): mcp, CHILD: child, GRANDCHILD: grandchild}
    for case in (*RETURNS, *ERRORS):
        homes[case.mount].tool(case.fn, name=case.fn.__name__, task=OPTIONAL, **case.tool_options)
    child.mount(grandchild, namespace=GRANDCHILD[-1])
    mcp.mount(child, namespace=CHILD[-1])

    @mcp.resource("memo://notes/1")
    async def note() -> str:
        return "a note"

    return mcp


@dataclass(frozen=True)
class Message:
    """One JSON-RPC response: its exact text on the wire, and that text parsed."""

    text: str

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.text)


@dataclass
class Wire:
    """Raw JSON-RPC over streamable HTTP against one running server."""

    url: str
    http: httpx.AsyncClient
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    async def request(
        self, method: str, params: dict[str, Any], *, name: str, tasks: bool
    ) -> Message:
        capabilities: dict[str, Any] = {}
        if tasks:
            capabilities["extensions"] = {TASKS_EXTENSION_ID: {}}
        params = {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                "io.modelcontextprotocol/clientInfo": {"name": "parity-test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            },
        }
        body = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        response = await self.http.post(
            self.url,
            json=body,
            headers={
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": PROTOCOL,
                "Mcp-Method": method,
                "Mcp-Name": name,
            },
        )
        return _jsonrpc_response(response)

    async def call_sync(self, tool: str, arguments: dict[str, Any]) -> Message:
        """A plain ``tools/call``: the request does not declare the tasks extension."""
        return await self.request(
            "tools/call", {"name": tool, "arguments": arguments}, name=tool, tasks=False
        )

    async def call_as_task(self, tool: str, arguments: dict[str, Any]) -> tuple[Message, Message]:
        """Create the task and poll it; returns (CreateTaskResult, terminal ``tasks/get``)."""
        created = await self.request(
            "tools/call", {"name": tool, "arguments": arguments}, name=tool, tasks=True
        )
        assert created.data.get("result", {}).get("resultType") == "task", created.text
        task_id = created.data["result"]["taskId"]
        deadline = asyncio.get_running_loop().time() + TASK_DEADLINE_S
        while True:
            got = await self.request("tasks/get", {"taskId": task_id}, name=task_id, tasks=True)
            status = got.data["result"]["status"]
            if status in ("completed", "failed", "cancelled"):
                return created, got
            assert status == "working", got.text
            assert asyncio.get_running_loop().time() < deadline, f"task stuck: {got.text}"
            await asyncio.sleep(0.02)


def _jsonrpc_response(response: httpx.Response) -> Message:
    """The JSON-RPC response: a plain JSON body, or the last SSE ``data:`` frame with an id."""
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        message = Message(response.text)
        # 400 only for the protocol errors that carry it (-32021 in this file).
        assert response.status_code == (400 if "error" in message.data else 200), response.text
        return message
    assert response.status_code == 200, response.text
    frames = [
        line[len("data:") :].strip()
        for line in response.text.splitlines()
        if line.startswith("data:") and line[len("data:") :].strip()
    ]
    answers = [frame for frame in frames if "id" in json.loads(frame)]
    assert answers, response.text
    return Message(answers[-1])


# -- byte-exact views of JSON text ------------------------------------------------

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\r\n"


def _members(text: str) -> dict[str, tuple[str, str]]:
    """Split a JSON object's text into its members, keeping every byte.

    Returns ``{key: (raw key text, raw value text)}`` in wire order: the value
    texts are slices of the original, never re-encoded, so comparing them
    compares what the server actually sent (number spelling, escapes, key
    order, ``null`` versus absent).
    """
    members: dict[str, tuple[str, str]] = {}

    def skip(at: int) -> int:
        while text[at] in _WHITESPACE:
            at += 1
        return at

    at = skip(0)
    assert text[at] == "{", text[:80]
    at = skip(at + 1)
    if text[at] == "}":
        return members
    while True:
        key_start = at
        key, at = _DECODER.raw_decode(text, at)
        raw_key = text[key_start:at]
        at = skip(at)
        assert text[at] == ":"
        value_start = at = skip(at + 1)
        _, at = _DECODER.raw_decode(text, at)
        assert key not in members, f"duplicate key {key!r}"
        members[key] = (raw_key, text[value_start:at])
        at = skip(at)
        if text[at] == "}":
            return members
        assert text[at] == ",", text[at : at + 40]
        at = skip(at + 1)


def _assemble(members: dict[str, tuple[str, str]]) -> str:
    """The inverse of ``_members`` for the compact encoding the server uses."""
    return "{" + ",".join(f"{key}:{value}" for key, value in members.values()) + "}"


def _member(text: str, *path: str) -> str:
    """The raw text of ``text[path[0]][path[1]]...``."""
    for key in path:
        members = _members(text)
        # The server writes compact JSON, so re-joining the members reproduces
        # the message byte for byte; this is what makes _assemble trustworthy.
        assert _assemble(members) == text
        text = members[key][1]
    return text


def _without_envelope_stamp(result_text: str) -> str:
    """The sync ``tools/call`` result text minus what the transport stamps on *every* response.

    The SDK's runner adds ``_meta["io.modelcontextprotocol/serverInfo"]`` to the
    top-level result of every 2026-07-28 response (``tools/call``, ``tasks/get``,
    ...; ``mcp.server.runner._stamp_server_info``): it describes the *response*,
    not the tool's result. On the task path the same stamp sits on the
    ``tasks/get`` result, not inside the inlined ``result`` (asserted in
    ``_assert_parity``), so it is the one member removed, in place, keeping
    every other byte. A ``_meta`` the stamp created (nothing else in it) goes
    too; any ``_meta`` the *tool* set stays, with its original position and bytes.
    """
    members = _members(result_text)
    if "_meta" in members:
        meta = _members(members["_meta"][1])
        del meta[SERVER_INFO]
        if meta:
            members["_meta"] = (members["_meta"][0], _assemble(meta))
        else:
            del members["_meta"]
    return _assemble(members)


# =============================================================================
# Fixtures
# =============================================================================


@pytest.fixture(scope="module")
async def wires(
    temporal_client: TemporalClient, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[bool, Wire]]:
    """One server per masking policy, each with its own task queue, for the module.

    Built once (not per test) to keep the file fast: the catalogue has ~80
    tools and every case of a policy shares its server and worker.
    """
    run = uuid.uuid4().hex[:8]
    servers = {
        mask: _build_server("parity-masked" if mask else "parity", mask) for mask in (False, True)
    }
    for mask, server in servers.items():
        server.add_extension(
            TemporalTasks(
                client=temporal_client,
                task_queue=f"parity-{run}-{int(mask)}",
                data_dir=tmp_path_factory.mktemp("parity-payloads"),
                # The call without the opt-in is the *inline* one this file compares
                # a task with; durable synchronous calls are tasks themselves.
                durable_sync_calls=False,
            )
        )
    async with (
        run_server_async(servers[False]) as plain_url,
        run_server_async(servers[True]) as masked_url,
        # No kept-alive connections: uvicorn closes one idle for 5 s, and a request sent
        # on it at that moment (a gap a loaded machine makes) fails with ReadError.
        httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_keepalive_connections=0)) as http,
    ):
        yield {False: Wire(plain_url, http), True: Wire(masked_url, http)}


# =============================================================================
# The tests
# =============================================================================


async def _assert_parity(wire: Wire, case: Case) -> None:
    sync = await wire.call_sync(case.name, case.arguments)
    created, final = await wire.call_as_task(case.name, case.arguments)
    task = final.data["result"]

    # The stamp that _without_envelope_stamp removes is not lost: every task
    # response carries the very same one, on the response itself.
    stamp = created.data["result"]["_meta"][SERVER_INFO]
    assert task["_meta"][SERVER_INFO] == stamp

    if "error" in sync.data:
        # The synchronous call failed at the JSON-RPC level (only -32021 does
        # so from a tool body): the task fails with the same error object.
        assert task["status"] == "failed", final.text
        assert "result" not in task
        assert task["error"] == sync.data["error"]
        assert _member(final.text, "result", "error") == _member(sync.text, "error")
        return

    assert sync.data["result"]["_meta"][SERVER_INFO] == stamp
    assert task["status"] == "completed", final.text
    expected = _without_envelope_stamp(_member(sync.text, "result"))
    inlined = _member(final.text, "result", "result")
    # Nothing of the envelope leaks into the inlined result.
    assert SERVER_INFO not in task["result"].get("_meta", {})
    # Parsed first, for a readable diff; then the bytes themselves.
    assert json.loads(inlined) == json.loads(expected)
    assert inlined == expected


def _params(cases: list[Case], masks: tuple[bool, ...]) -> list[Any]:
    params = []
    for case in cases:
        for mask in masks:
            marks = [pytest.mark.xfail(reason=case.xfail, strict=True)] if case.xfail else []
            suffix = ("-masked" if mask else "-unmasked") if len(masks) > 1 else ""
            params.append(pytest.param(case, mask, id=f"{case.name}{suffix}", marks=marks))
    return params


@pytest.mark.parametrize(("case", "mask"), _params(RETURNS, (False,)))
async def test_returned_value_is_inlined_verbatim(
    wires: dict[bool, Wire], case: Case, mask: bool
) -> None:
    await _assert_parity(wires[mask], case)


@pytest.mark.parametrize(("case", "mask"), _params(ERRORS, (False, True)))
async def test_raised_error_matches_synchronous_call(
    wires: dict[bool, Wire], case: Case, mask: bool
) -> None:
    await _assert_parity(wires[mask], case)


async def test_unknown_tool_is_not_tasked(wires: dict[bool, Wire]) -> None:
    """Control: a name no tool has gets the same answer with and without the opt-in."""
    wire = wires[False]
    sync = await wire.call_sync("no_such_tool", {})
    opted_in = await wire.request(
        "tools/call", {"name": "no_such_tool", "arguments": {}}, name="no_such_tool", tasks=True
    )
    assert sync.data["result"]["isError"] is True
    assert _member(opted_in.text, "result") == _member(sync.text, "result")


def test_byte_view_helpers() -> None:
    """The raw-text helpers keep bytes the parsed view would lose."""
    stamp = json.dumps(SERVER_INFO)
    text = '{"a":1.0,"b":{"x":"\\u00e9","y":null},"_meta":{"k":1,' + stamp + ':{"n":"s"}}}'
    assert _member(text, "a") == "1.0"  # json.loads would give 1.0 == 1
    assert _member(text, "b", "x") == '"\\u00e9"'  # escape kept, not decoded
    assert _without_envelope_stamp(text) == '{"a":1.0,"b":{"x":"\\u00e9","y":null},"_meta":{"k":1}}'
    only_stamp = '{"a":[],"_meta":{' + stamp + ':{}},"z":0}'
    assert _without_envelope_stamp(only_stamp) == '{"a":[],"z":0}'


def test_catalogue_is_complete() -> None:
    """Every catalogue entry is a distinct tool (a duplicate would silently shadow one)."""
    names = [case.name for case in (*RETURNS, *ERRORS)]
    assert len(names) == len(set(names))
    assert len(RETURNS) >= 60 and len(ERRORS) >= 15
