"""A FastMCP release without a private name ``_compat`` reads still imports, and says so.

Each private name ``fastmcp_temporal/_compat/`` reads at module load is looked
up, not imported: if one moves, ``import fastmcp_temporal`` (and every module of
the package) still works, and the first use of what it served logs a warning that
names it and what stops working. Simulated here in a fresh interpreter (so this
process's FastMCP is untouched) by deleting those names before the import.

Two FastMCP rules this package follows with public pieces instead of a private
name are compared here with FastMCP's own, case by case, on the installed line:
argument validation at task creation, and a result parsed as ``call_tool`` does.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pydantic
import pytest
from fastmcp import Client, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import Middleware
from fastmcp.tools.base import ToolResult
from mcp_types import TextContent
from pydantic import ValidationError

from fastmcp_temporal.server.protocol.creation import _probe_for, validate_as_function_tool
from tests.helpers import ROOT
from tests.test_layering import MODULES as SOURCES

#: Every module of the package (its pytest plugin needs pytest, as test suites have).
MODULES = sorted(name for name in SOURCES if name != "fastmcp_temporal.testing")

#: Module -> the private names it loses, as a future release might move them.
GONE = {
    "fastmcp.server.dependencies": [
        "_background_task_headers",
        "_background_task_session_id",
        "_is_client_tool_call",
    ],
    "fastmcp.tools.function_tool": [
        "_resolve_param_hints",
        "_strict_input_validation",
        "_validate_input",
    ],
    "fastmcp.server.context": ["_log_level_session_key"],
}

PROBE = f"""
import importlib, json, logging

GONE = {GONE!r}
for module, names in GONE.items():
    owner = importlib.import_module(module)
    for name in names:
        if hasattr(owner, name):
            delattr(owner, name)

records = []
logging.basicConfig(level=logging.WARNING)
logging.getLogger("fastmcp_temporal").addHandler(
    type("Keep", (logging.Handler,), {{"emit": lambda self, r: records.append(r.getMessage())}})()
)

import fastmcp_temporal
from fastmcp_temporal import _compat

names = {MODULES!r}
for name in names:
    importlib.import_module(name)

_compat.restore_request_identity(None, {{"x-trace": "1"}}, "session-1")
from_client = _compat.is_client_tool_call()
print(json.dumps({{
    "modules": len(names),
    "per_session": _compat.LOG_LEVEL_PER_SESSION,
    "from_client": from_client,
    "warnings": records,
}}))
"""


def test_import_survives_every_private_name_read_at_load_going_away() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["modules"] == len(MODULES) > 50
    assert seen["per_session"] is False  # 4.1's per-session levels: off, as on 4.2
    assert seen["from_client"] is True  # every dispatch counts as the client's
    warnings = "\n".join(seen["warnings"])
    for missing, consequence in [
        ("_background_task_headers", "get_http_headers() in a task returns {}"),
        ("_background_task_session_id", "session_id raises in a tool that a task's tool calls"),
        ("_is_client_tool_call", "tools called by other tools run as tasks too"),
    ]:
        assert f"has no {missing}: {consequence}" in warnings, warnings
    assert len(seen["warnings"]) == 3  # each once


def test_with_every_private_name_present_nothing_is_degraded() -> None:
    """The installed line has every name ``_compat`` reads (else CI's bounds are wrong)."""
    import fastmcp.server.dependencies as dependencies
    from temporalio import workflow

    from fastmcp_temporal._compat import degraded, fastmcp_names

    assert fastmcp_names._bg_headers is dependencies._background_task_headers
    assert fastmcp_names._bg_session_id is dependencies._background_task_session_id
    assert fastmcp_names._fastmcp_is_client_tool_call is dependencies._is_client_tool_call
    assert hasattr(workflow, "_Definition")
    assert degraded._warned == set()


class _Color(enum.Enum):
    RED = "red"


def _tool(n: int, when: datetime.datetime, color: _Color, tags: tuple[str, ...] = ()) -> None:
    """A tool signature with what strict JSON mode treats differently from Python mode."""


def test_creation_validates_arguments_as_fastmcp_does() -> None:
    """Task creation validates with pydantic's public API what FastMCP validates privately.

    ``creation.validate_as_function_tool`` follows FastMCP's rule for
    ``strict_input_validation`` (strict JSON mode for JSON data); compared here
    with FastMCP's own ``function_tool._validate_input`` on the installed line, case
    by case: the same values, or the same error text.
    """
    import fastmcp.tools.function_tool as function_tool

    fastmcp_validate = getattr(function_tool, "_validate_input", None)
    if fastmcp_validate is None:
        pytest.skip("this FastMCP has no function_tool._validate_input to compare with")

    adapter, _ = _probe_for(_tool, False)
    good = {"n": 1, "when": "2026-01-02T03:04:05Z", "color": "red", "tags": ["a"]}
    cases = [
        good,
        {**good, "n": "10"},  # a lax coercion: strict rejects it
        {**good, "n": 1.0},
        {**good, "n": True},
        {**good, "color": "blue"},
        {**good, "when": "yesterday"},
        {"n": 1},  # missing arguments
        {**good, "extra": 1},
        {**good, "when": datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC)},  # not JSON data
    ]

    def outcome(validate: Any, arguments: dict[str, Any], strict: bool) -> Any:
        try:
            return validate(adapter, dict(arguments), strict=strict)
        except ValidationError as err:
            return ("error", str(err))

    for strict in (False, True):
        for arguments in cases:
            ours = outcome(validate_as_function_tool, arguments, strict)
            theirs = outcome(fastmcp_validate, arguments, strict or None)
            assert ours == theirs, (strict, arguments)


def test_names_read_at_use_degrade_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A release without ``_mcp_server`` or the provider tool's ``_server`` still serves,
    and says once what stops working."""
    from types import SimpleNamespace

    from fastmcp.server.providers.fastmcp_provider import FastMCPProviderTool

    from fastmcp_temporal import _compat
    from fastmcp_temporal._compat import degraded

    monkeypatch.setattr(degraded, "_warned", set())
    without: Any = SimpleNamespace()
    _compat.serve_listen(without, object())
    mounted = FastMCPProviderTool(server=None, original_name="inner", name="outer", parameters={})
    assert _compat.mounted_origin(mounted) is None
    warnings = "\n".join(r.getMessage() for r in caplog.records)
    for missing, consequence in [
        ("FastMCP._mcp_server", "subscriptions/listen is not served"),
        ("FastMCPProviderTool._server", "follow the mounting server's masking"),
    ]:
        assert f"has no {missing}: " in warnings and consequence in warnings, warnings
    assert len(degraded._warned) == 2


@dataclasses.dataclass
class _Point:
    x: int
    y: int


class _Model(pydantic.BaseModel):
    name: str
    when: datetime.datetime


class _Node(pydantic.BaseModel):
    name: str
    children: list[_Node] = []


_WHEN = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)

#: Tool name -> (what it returns, its return annotation, its ``output_schema`` if given).
_RETURNS: dict[str, tuple[Any, Any, Any]] = {
    "integer": (3, int, ...),
    "text": ("text", str, ...),
    "point": (_Point(1, 2), _Point, ...),
    "model": (_Model(name="m", when=_WHEN), _Model, ...),
    "numbers": ([1, 2], list[int], ...),
    "mapping": ({"a": 1}, dict[str, int], ...),
    "nothing": (None, None, ...),
    "tags": ({"b", "a"}, set[str], ...),
    "maybe_none": (None, int | None, ...),
    "maybe_int": (4, int | None, ...),
    "either": ("s", int | str, ...),
    "nodes": ([_Node(name="a", children=[_Node(name="b")])], list[_Node], ...),  # root $defs
    "untyped": ({"c": 1}, dict[str, int], None),
    "plain": ("only content", str, None),
    "content_only": (ToolResult(content=[TextContent(type="text", text="t")]), ToolResult, ...),
    "wrapped_by_meta": (
        ToolResult(structured_content={"result": 5}, meta={"fastmcp": {"wrap_result": True}}),
        ToolResult,
        None,
    ),
    "wrapped_by_schema": (  # no wrap_result in _meta: the schema's marker alone unwraps
        ToolResult(structured_content={"result": "2026-01-02T03:04:05Z"}),
        ToolResult,
        {
            "type": "object",
            "properties": {"result": {"type": "string", "format": "date-time"}},
            "required": ["result"],
            "x-fastmcp-wrap-result": True,
        },
    ),
    # Valid JSON Schema (the SDK's check passes) that the content fails as a type: no .data.
    "undecodable": (
        ToolResult(structured_content={"when": "not a date"}),
        ToolResult,
        {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}},
    ),
}


def _returning(value: Any, annotation: Any) -> Callable[[], Any]:
    """A tool without arguments that returns ``value``, annotated ``-> annotation``."""

    def tool() -> Any:
        return value

    tool.__annotations__ = {"return": annotation}
    return tool


def _parity_server() -> tuple[FastMCP, list[str]]:
    """The tools of ``_RETURNS`` and one that fails; the ``tools/list`` requests it answers."""
    mcp = FastMCP("parse-parity")
    listings: list[str] = []

    class CountListings(Middleware):
        async def on_list_tools(self, context: Any, call_next: Any) -> Any:
            listings.append("tools/list")
            return await call_next(context)

    mcp.add_middleware(CountListings())
    for name, (value, annotation, schema) in _RETURNS.items():
        options = {} if schema is ... else {"output_schema": schema}
        mcp.tool(_returning(value, annotation), name=name, **options)

    @mcp.tool
    def broken() -> int:
        raise ToolError("it broke")

    return mcp, listings


def _plain(value: Any) -> Any:
    """``value`` with each object's type name beside its fields (each parse makes its types)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return (type(value).__name__, fields)
    if isinstance(value, pydantic.BaseModel):
        return (type(value).__name__, {k: _plain(v) for k, v in value})
    if isinstance(value, dict):
        return ("dict", {k: _plain(v) for k, v in value.items()})
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_plain(v) for v in value]
        return (
            type(value).__name__,
            sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items,
        )
    return (type(value).__name__, value)


async def test_a_result_is_parsed_as_fastmcp_call_tool_parses_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``client_result.parse_tool_result`` (public pieces) equals FastMCP's own ``call_tool``.

    Case by case on the installed line: the raw result a synchronous call gets
    (``call_tool_mcp``), parsed by ours, against ``client.call_tool`` of the same
    tool -- ``.data`` (typed: dataclasses, models, sets, datetimes, optionals,
    wrapped values; ``None`` where no type validates), ``.structured_content``,
    ``.content``, ``.meta``, ``.is_error``, and the ``ToolError`` of a failed
    tool. Ours lists tools once for the session.
    """
    from fastmcp_temporal.client_result import parse_tool_result

    mcp, listings = _parity_server()
    async with Client(mcp) as theirs, Client(mcp) as ours:
        for name in [*_RETURNS, "broken"]:
            expected = await theirs.call_tool(name, {}, raise_on_error=False)
            raw = await ours.call_tool_mcp(name, {})
            listings.clear()
            parsed = await parse_tool_result(ours, name, raw, raise_on_error=False)
            assert _plain(parsed.data) == _plain(expected.data), name
            assert parsed.structured_content == expected.structured_content, name
            assert parsed.content == expected.content, name
            assert parsed.meta == expected.meta, name
            assert parsed.is_error is expected.is_error, name
            assert listings == (["tools/list"] if name == "integer" else []), name
        with pytest.raises(ToolError) as fastmcp_error:
            await theirs.call_tool("broken", {})
        with pytest.raises(ToolError) as our_error:
            await parse_tool_result(ours, "broken", raw, raise_on_error=True)
        assert str(our_error.value) == str(fastmcp_error.value) == "it broke"
    assert expected.is_error
    logged = [r.getMessage() for r in caplog.records if r.name == "fastmcp_temporal.client_result"]
    assert len(logged) == 1 and "Error parsing structured content" in logged[0]  # "undecodable"
