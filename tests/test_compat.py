"""A FastMCP release without a private name ``_compat`` reads still imports, and says so.

Each private name ``fastmcp_temporal/_compat/`` reads at module load is looked
up, not imported: if one moves, ``import fastmcp_temporal`` (and every module of
the package) still works, and the first use of what it served logs a warning that
names it and what stops working. Simulated here in a fresh interpreter (so this
process's FastMCP is untouched) by deleting those names before the import.
"""

from __future__ import annotations

import json
import subprocess
import sys

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

from pydantic import TypeAdapter

_compat.restore_request_identity(None, {{"x-trace": "1"}}, "session-1")
from_client = _compat.is_client_tool_call()
lax = _compat.validate_tool_input(TypeAdapter(dict), {{"a": 1}}, strict=False)
strict = _compat.validate_tool_input(TypeAdapter(dict), {{"a": 1}}, strict=True)
print(json.dumps({{
    "modules": len(names),
    "per_session": _compat.LOG_LEVEL_PER_SESSION,
    "from_client": from_client,
    "validated": [lax, strict],
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
    assert seen["validated"] == [{"a": 1}, {"a": 1}]
    warnings = "\n".join(seen["warnings"])
    for missing, consequence in [
        ("_background_task_headers", "get_http_headers() in a task returns {}"),
        ("_background_task_session_id", "session_id raises in a tool that a task's tool calls"),
        ("_is_client_tool_call", "tools called by other tools run as tasks too"),
        ("function_tool._validate_input", "strict_input_validation applies when a leg runs"),
    ]:
        assert f"has no {missing}: {consequence}" in warnings, warnings
    assert len(seen["warnings"]) == 4  # each once


def test_with_every_private_name_present_nothing_is_degraded() -> None:
    """The installed line has every name ``_compat`` reads (else CI's bounds are wrong)."""
    import fastmcp.server.dependencies as dependencies
    import fastmcp.tools.function_tool as function_tool
    from temporalio import workflow

    from fastmcp_temporal._compat import degraded, fastmcp_names

    assert fastmcp_names._bg_headers is dependencies._background_task_headers
    assert fastmcp_names._bg_session_id is dependencies._background_task_session_id
    assert fastmcp_names._fastmcp_is_client_tool_call is dependencies._is_client_tool_call
    assert fastmcp_names._validate_input is function_tool._validate_input
    assert hasattr(workflow, "_Definition")
    assert degraded._warned == set()
