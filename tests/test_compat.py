"""A FastMCP release without a private name ``_compat`` reads still imports, and says so.

Each private name ``fastmcp_temporal/_compat/`` reads at module load is looked
up, not imported: if one moves, ``import fastmcp_temporal`` (and every module of
the package) still works, and the first use of what it served logs a warning that
names it and what stops working. Simulated here in a fresh interpreter (so this
process's FastMCP is untouched) by deleting those names before the import.
"""

from __future__ import annotations

import datetime
import enum
import json
import subprocess
import sys
from typing import Any

import pytest
from fastmcp.exceptions import ToolError
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


async def test_names_read_at_use_degrade_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A release without ``_mcp_server``, the provider tool's ``_server`` or the client's
    ``_parse_call_tool_result`` still serves, and says once what stops working."""
    from types import SimpleNamespace

    import mcp_types
    from fastmcp.server.providers.fastmcp_provider import FastMCPProviderTool

    from fastmcp_temporal import _compat
    from fastmcp_temporal._compat import degraded

    monkeypatch.setattr(degraded, "_warned", set())
    without: Any = SimpleNamespace()
    _compat.serve_listen(without, object())
    mounted = FastMCPProviderTool(server=None, original_name="inner", name="outer", parameters={})
    assert _compat.mounted_origin(mounted) is None
    raw = mcp_types.CallToolResult(content=[], structured_content={"a": 1})
    parsed = await _compat.parse_tool_result(without, "tool", raw, raise_on_error=True)
    assert parsed.data == {"a": 1} and parsed.is_error is False
    failed = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="boom")], is_error=True
    )
    with pytest.raises(ToolError, match="boom"):
        await _compat.parse_tool_result(without, "tool", failed, raise_on_error=True)
    warnings = "\n".join(r.getMessage() for r in caplog.records)
    for missing, consequence in [
        ("FastMCP._mcp_server", "subscriptions/listen is not served"),
        ("FastMCPProviderTool._server", "follow the mounting server's masking"),
        ("Client._parse_call_tool_result", ".data is the structured content untyped"),
    ]:
        assert f"has no {missing}: " in warnings and consequence in warnings, warnings
    assert len(degraded._warned) == 3
