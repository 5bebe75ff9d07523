"""Which test modules run on every FastMCP line, and why.

The whole suite runs on FastMCP 4.1.4 with the peer (``./dev test``). The newest
releases the bounds allow (``FASTMCP_LINE=newest``: FastMCP 4.2.x today) run what
can differ between FastMCP lines: the modules below, each marked ``every_line`` at
collection, with the core (``CORE``, below), so CI runs ``-m "(every_line or core)
and not chaos"`` there, and the core alone on the newest 4.1.x. What can differ is what goes through
FastMCP or the MCP SDK: every private name in ``fastmcp_temporal/_compat/``,
the wire FastMCP serializes, the client half, FastMCP's ``Context`` inside a
task, its argument validation, its auth context, its transports, and the MCP
types a recorded history decodes into. What is left out runs Temporal's
behaviour through our engine (kills, drains, retries, versioning, quotas,
fairness, payload stores, the codec, the CLI's Temporal operations): the same
code on every line, tested once. The worker CLI's way into a server's lifespan
(its HTTP app's public ``lifespan``) is covered on both lines by ``./dev
install-check``, which starts ``fastmcp-temporal worker`` on the demo.

A new module that touches any of that belongs here; ``tests/test_lines.py``
checks that every name below is a test module that exists.
"""

from __future__ import annotations

import pytest

MARKER = "every_line"

#: Test module -> what in it can differ between FastMCP lines.
EVERY_LINE: dict[str, str] = {
    "test_wire": "the SEP-2663 wire as FastMCP's request handling serves it",
    "test_client": "fastmcp_temporal.client on the line's FastMCP Client",
    "test_result_parity": "tool results through the SDK's per-version serializer "
    "and the line's runner (client_result.parse_tool_result)",
    "test_task_context": "FastMCP's Context inside a task: log levels per line "
    "(_compat.LOG_LEVEL_PER_SESSION), progress routing",
    "test_peer_parity": "what a task tool observes, against the peer where it exists",
    "test_peer_parity_context": "Context behaviour inside a task, mounted servers "
    "(_compat.mounted_origin)",
    "test_mrtr": "MRTR rounds through FastMCP's tools/call handling",
    "test_input_capabilities": "the client's declared capabilities as FastMCP reads them",
    "test_sampling": "sample() through the line's client sampling callback",
    "test_listen": "subscriptions/listen served through _compat.serve_listen",
    "test_bad_values": "FastMCP's argument validation, as creation repeats it",
    "test_scope": "the caller's identity from FastMCP's auth context "
    "(_compat.restore_request_identity)",
    "test_idempotency": "headers and _meta as FastMCP's request context carries them",
    "test_workflow_tools": "workflow tools' signatures (_compat.workflow_run_signature)",
    "test_stored_result": "stored results parsed by the client (client_result.parse_tool_result)",
    "test_time_to_result": "pollIntervalMs as the line's client follows it",
    "test_metrics": "the MCP request metrics FastMCP's middleware reports",
    "test_remote_mcp": "remote MCP servers through the line's FastMCP Client transports",
    "test_sync_calls": "plain tools/call as the line's FastMCP and MCP SDK clients send it",
    "test_sync_calls_lifecycle": "a plain call's cancellation and progress on the line's wire",
    "test_sync_calls_live": "live-request bodies and 2025-11-25 questions on the open call",
    "test_sync_calls_workflow_tools": "workflow tools called without the tasks opt-in",
    "test_sync_calls_peer_parity": "a plain call's CallToolResult against the peer's inline run",
    "test_sync_calls_processes": "a plain call over the line's stdio transport on both wires, "
    "and a front end drained as the line's run(transport='http') shuts uvicorn down",
    "test_sync_calls_clients": "plain calls from the SDK's ClientSession and the raw wire "
    "as each FastMCP line serves them",
    "test_sessions": "2025-xx sessions any front end serves, through the line's "
    "http_app(middleware=...) and its SDK session manager's wire",
    "test_fleet": "answers and cancels through another front end behind a round-robin proxy, "
    "on the line's streamable HTTP transport and the SDK's ClientSession",
    "test_examples": "the examples a user of the line runs",
    "test_hosts": "real hosts (Claude Code, Codex) against the line's streamable HTTP transport: "
    "2026-07-28 stateless, 2025-06-18 with a session and a GET stream",
    "test_openai_agents": "an OpenAI Agents SDK agent called plainly on the line's wire "
    "(the SDK depends on the MCP SDK too)",
    "test_langgraph": "a LangGraph graph called plainly on the line's wire",
    "test_startup_line": "the start-up line through FastMCP's logger (get_logger, its handler)",
    "test_replay": "recorded histories decoded into the line's MCP types",
    "test_compat": "every private name _compat reads at load, present, and its absence survived",
    "test_stock_beside": "FastMCP's own Progress and classes, untouched beside a running task",
    "test_lines": "this list itself",
}


CORE_MARKER = "core"

#: The core, which CI runs on the newest releases pyproject.toml's bounds allow and
#: on the newest 4.1.x (``FASTMCP_LINE=newest ./dev test -m core``): a test module, or one test of
#: it (``module::test``) -> the private names of ``fastmcp_temporal/_compat/`` it
#: exercises. Small on purpose (about a minute): it tells early whether a new release
#: within the bounds still works; the lines above tell the rest.
CORE: dict[str, str] = {
    "test_compat": "every name read at load present; their absence survived; a result "
    "parsed as the line's call_tool parses it (no private name: its rules)",
    "test_stock_beside": "Progress per leg, nothing of FastMCP's or uvicorn's reassigned",
    "test_task_context": "Context in a leg: the caller restored (auth_context_var, "
    "_background_task_headers / _session_id), log levels (4.1), Progress",
    "test_wire::test_strict_input_validation_is_honoured_up_front": "validation at "
    "creation as FastMCP's own (no private name: its rule, kept by test_compat)",
    "test_wire::test_invalid_arguments_are_an_error_and_start_no_workflow": "the same",
    "test_listen": "subscriptions/listen on FastMCP's low-level server (_mcp_server)",
    "test_workflow_tools::test_a_full_run_with_input_over_http": "workflow._Definition",
    "test_sync_calls_lifecycle::test_notifications_cancelled_cancels_the_task": "a "
    "client's cancel (ServerSession._request_outbound)",
    "test_sessions::test_the_sdk_client_carries_on_when_its_front_end_is_killed": "the "
    "sessions' ASGI seam: a session this process never saw",
    "test_sessions::test_a_deleted_session_is_refused_where_it_was_deleted": "the same",
    "test_lines": "these lists themselves",
}


def mark_every_line(items: list[pytest.Item]) -> None:
    """Add the ``every_line`` and ``core`` markers to the tests of the modules above."""
    for item in items:
        module = getattr(item, "module", None)
        if module is None:
            continue
        name = module.__name__.rsplit(".", 1)[-1]
        if name in EVERY_LINE:
            item.add_marker(MARKER)
        test = getattr(item, "originalname", item.name)
        if name in CORE or f"{name}::{test}" in CORE:
            item.add_marker(CORE_MARKER)
