"""The catalogue of return values: one async tool per kind of value a FastMCP tool returns.

``tests/test_result_parity.py`` registers every tool here (``RETURNS``) and its
failures (``tests/parity_errors.py``, ``ERRORS``) on one server and proves that a
task's inlined result is the synchronous ``tools/call`` result, byte for byte;
``tests/test_sync_calls_peer_parity.py`` runs the same catalogue as plain calls.
``returns`` registers a tool with the arguments to call it with and its tool
options; ``mount`` places it on a mounted server (``CHILD``, ``GRANDCHILD``).
"""

from __future__ import annotations

import base64
import enum
import random
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

import mcp_types
from fastmcp import Context
from fastmcp.tools import ToolResult
from fastmcp.utilities.types import Audio, File, Image
from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

# A few fixed binary payloads (a 1x1 PNG, a few WAV-ish bytes, non-UTF-8 data).
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAHnOcQAAAAABJRU5ErkJggg=="
)
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00"
NOT_UTF8 = b"\xff\xfe\x00\x81binary"


@dataclass
class Case:
    """One tool of the catalogue and how to call it."""

    fn: Callable[..., Awaitable[Any]]
    arguments: dict[str, Any]
    tool_options: dict[str, Any]
    xfail: str | None = None
    #: Where the tool lives: () on the server itself, else the namespaces of
    #: the chain of mounted servers that lead to it (see ``test_result_parity._build_server``).
    mount: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The name the client calls."""
        return "_".join((*self.mount, self.fn.__name__))


RETURNS: list[Case] = []


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


# Tools of mounted servers: a child mounted as ``child``, and a grandchild
# mounted on the child as ``inner`` (called ``child_<name>``, ``child_inner_<name>``)
CHILD = ("child",)
GRANDCHILD = ("child", "inner")


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


# -- tools of mounted servers ---------------------------------------------------


@returns(mount=CHILD)
async def mounted_returns_model() -> Person:
    return Person(name="Mounted", age=1, score=0.5)


@returns(mount=CHILD)
async def mounted_returns_tool_result() -> ToolResult:
    return ToolResult(content="from the child", structured_content={"k": 1}, meta={"m": True})


@returns(mount=GRANDCHILD)
async def nested_returns_dataclass() -> Point:
    return Point(x=1.0, y=2.0, label="deep")
