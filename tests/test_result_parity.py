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
  ``result``, byte for byte once re-serialized (see ``_canonical``). A
  synchronous JSON-RPC *error* must likewise reappear verbatim as the
  ``error`` of a ``failed`` task.

Using one optional tool for both calls (rather than ``x_sync``/``x_task``
twins) matters: masked error texts and ``Unknown tool`` messages contain the
tool's name, so twins could never be byte-identical.

Cases that reveal a server divergence stay here, marked ``xfail(strict=True)``
with the reason, so they flip to a failure the moment the server is fixed.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import enum
import itertools
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Annotated, Any, Literal

from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

import httpx
import mcp_types
import pytest
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ResourceError, ToolError, ValidationError
from fastmcp.tools import ToolResult
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID, TaskConfig
from fastmcp.utilities.tests import run_server_async
from fastmcp.utilities.types import Audio, File, Image
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks

PROTOCOL = "2026-07-28"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
OPTIONAL = TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=50))
TASK_DEADLINE_S = 15.0

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
    #: Error cases run against both a masking and a non-masking server.
    masking_matters: bool = False

    @property
    def name(self) -> str:
        return self.fn.__name__


RETURNS: list[Case] = []
ERRORS: list[Case] = []


def returns(
    arguments: dict[str, Any] | None = None, *, xfail: str | None = None, **tool_options: Any
) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Register a tool whose *return value* must survive the task path intact."""

    def register(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        RETURNS.append(Case(fn, arguments or {}, tool_options, xfail))
        return fn

    return register


def raises(
    arguments: dict[str, Any] | None = None, *, xfail: str | None = None, **tool_options: Any
) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Register a tool whose *failure* must look the same on both paths."""

    def register(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        ERRORS.append(Case(fn, arguments or {}, tool_options, xfail, masking_matters=True))
        return fn

    return register


# -- primitives ---------------------------------------------------------------


@returns({"text": "Grüße, 世界 — 🚀 \"quoted\" \\ back\nslash\t\u0000"})
async def returns_str(text: str) -> str:
    return text


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


# -- FastMCP media helpers --------------------------------------------------------


@returns()
async def returns_image_helper() -> Image:
    return Image(data=PNG, format="png")


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


@raises(
    xfail=(
        "BUG: an MCPError raised by a tool body is masked into an isError result by the "
        "synchronous tools/call (FastMCP.call_tool), but the leg activity turns it into a "
        "failed task with the raw JSON-RPC error (tool_leg.py `except MCPError`)."
    )
)
async def raises_mcp_error() -> str:
    raise MCPError(code=-32602, message="upstream said: bad params", data={"hint": "x"})


@raises(
    xfail=(
        "BUG: a NotFoundError raised by a tool body (e.g. ctx.read_resource of a missing "
        "URI) is answered 'Unknown tool: <name>' by the synchronous tools/call, but the "
        "leg activity returns the exception's own text."
    )
)
async def raises_not_found_via_context(ctx: Context) -> str:
    await ctx.read_resource("memo://does-not-exist")
    return "unreachable"


@raises()
async def returns_invalid_structured_content() -> Annotated[int, Field(ge=0)]:
    return "not an int"  # type: ignore[return-value]


# =============================================================================
# Server and raw wire
# =============================================================================


def _build_server(name: str, mask: bool) -> FastMCP:
    mcp = FastMCP(name, mask_error_details=mask)
    for case in (*RETURNS, *ERRORS):
        mcp.tool(case.fn, name=case.name, task=OPTIONAL, **case.tool_options)

    @mcp.resource("memo://notes/1")
    async def note() -> str:
        return "a note"

    return mcp


@dataclass
class Wire:
    """Raw JSON-RPC over streamable HTTP against one running server."""

    url: str
    http: httpx.AsyncClient
    _ids: itertools.count = dataclasses.field(default_factory=lambda: itertools.count(1))

    async def request(
        self, method: str, params: dict[str, Any], *, name: str, tasks: bool
    ) -> dict[str, Any]:
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
        return _last_jsonrpc_message(response)

    async def call_sync(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.request(
            "tools/call", {"name": tool, "arguments": arguments}, name=tool, tasks=False
        )

    async def call_as_task(
        self, tool: str, arguments: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Create the task and poll it; returns (CreateTaskResult message, final tasks/get)."""
        created = await self.request(
            "tools/call", {"name": tool, "arguments": arguments}, name=tool, tasks=True
        )
        assert created.get("result", {}).get("resultType") == "task", created
        task_id = created["result"]["taskId"]
        deadline = asyncio.get_running_loop().time() + TASK_DEADLINE_S
        while True:
            got = await self.request("tasks/get", {"taskId": task_id}, name=task_id, tasks=True)
            assert "result" in got, got
            if got["result"]["status"] in ("completed", "failed", "cancelled"):
                return created, got
            assert got["result"]["status"] == "working", got
            assert asyncio.get_running_loop().time() < deadline, f"task stuck: {got}"
            await asyncio.sleep(0.02)


def _last_jsonrpc_message(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC response in a plain JSON body or the last SSE ``data:`` frame."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        frames = [
            json.loads(line[len("data:") :])
            for line in response.text.splitlines()
            if line.startswith("data:") and line[len("data:") :].strip()
        ]
        messages = [frame for frame in frames if "id" in frame]
        assert messages, response.text
        return messages[-1]
    return response.json()


def _canonical(value: Any) -> str:
    """Re-serialize without reordering keys.

    Both sides are parsed from the wire and dumped by the same encoder, so
    equal strings mean equal key order, equal number spelling (``3.0`` vs
    ``3``, which ``==`` would not notice) and equal strings; only insignificant
    whitespace is normalized away.
    """
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


def _without_envelope_stamp(result: dict[str, Any]) -> dict[str, Any]:
    """The sync ``tools/call`` result minus what the transport stamps on *every* response.

    The SDK adds ``_meta["io.modelcontextprotocol/serverInfo"]`` to the top-level
    result of every response (tools/call, tasks/get, ...) -- it describes the
    response, not the tool's result. On the task path the same stamp sits on the
    ``tasks/get`` result, not inside the inlined ``result`` (asserted separately),
    so it is the one key removed. A ``_meta`` emptied by the removal was created
    by the stamp alone and goes too. Any ``_meta`` the *tool* set is kept.
    """
    stripped: dict[str, Any] = {}
    for key, value in result.items():  # rebuilt in place: key order is compared too
        if key == "_meta":
            value = {k: v for k, v in value.items() if k != SERVER_INFO}
            if not value:
                continue
        stripped[key] = value
    return stripped


# =============================================================================
# Fixtures
# =============================================================================


@pytest.fixture(scope="module")
async def wires(temporal_client: TemporalClient) -> AsyncIterator[dict[bool, Wire]]:
    """One server per masking policy, each with its own task queue, for the module.

    Built once (not per test) to keep the file fast: the catalogue is ~80
    tools and the workers are shared by all cases of a policy.
    """
    run = uuid.uuid4().hex[:8]
    servers = {
        mask: _build_server("parity-masked" if mask else "parity", mask) for mask in (False, True)
    }
    for mask, server in servers.items():
        server.add_extension(
            TemporalTasks(client=temporal_client, task_queue=f"parity-{run}-{int(mask)}")
        )
    async with (
        run_server_async(servers[False]) as plain_url,
        run_server_async(servers[True]) as masked_url,
        httpx.AsyncClient(timeout=30) as http,
    ):
        yield {False: Wire(plain_url, http), True: Wire(masked_url, http)}


# =============================================================================
# The tests
# =============================================================================


async def _assert_parity(wire: Wire, case: Case) -> None:
    sync = await wire.call_sync(case.name, case.arguments)
    created, final = await wire.call_as_task(case.name, case.arguments)
    task = final["result"]

    # The stamp removed from the sync result is really there, and the task's
    # responses carry the very same one (so nothing was lost, only placed on
    # the response that carries it).
    stamp = created["result"]["_meta"][SERVER_INFO]
    assert task["_meta"][SERVER_INFO] == stamp

    if "error" in sync:
        # The synchronous call failed at the JSON-RPC level: the task fails
        # with the same error object (code, message, data), not a result.
        assert task["status"] == "failed", task
        assert "result" not in task
        assert _canonical(task["error"]) == _canonical(sync["error"])
        return

    expected = sync["result"]
    assert expected.get("_meta", {}).get(SERVER_INFO) == stamp
    assert task["status"] == "completed", task
    inlined = task["result"]
    # Nothing of the envelope leaks into the inlined result.
    assert SERVER_INFO not in inlined.get("_meta", {})
    assert inlined == _without_envelope_stamp(expected)
    assert _canonical(inlined) == _canonical(_without_envelope_stamp(expected))


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
    """Control: a name no tool has answers the same with and without the opt-in."""
    wire = wires[False]
    sync = await wire.call_sync("no_such_tool", {})
    opted_in = await wire.request(
        "tools/call", {"name": "no_such_tool", "arguments": {}}, name="no_such_tool", tasks=True
    )
    assert "result" in sync and "result" in opted_in, (sync, opted_in)
    assert _canonical(opted_in["result"]) == _canonical(sync["result"])


def test_catalogue_is_complete() -> None:
    """Every catalogue entry is a distinct async tool (a typo would silently shadow one)."""
    names = [case.name for case in (*RETURNS, *ERRORS)]
    assert len(names) == len(set(names))
    assert len(RETURNS) >= 50 and len(ERRORS) >= 10
