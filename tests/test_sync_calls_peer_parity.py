"""A plain call's result, side by side with ``fastmcp-tasks``' inline run of the same tool.

A client without the tasks extension (a FastMCP ``Client`` without
``TasksClientExtension``, over streamable HTTP, on 2025-11-25 and 2026-07-28)
calls the same ``task=True`` tools on two servers: one with the peer's
``TasksExtension()``, which runs such a call inline in the front end, and one
with ``TemporalTasks()``, which runs it as the task's workflow (a durable
synchronous call). The ``CallToolResult``s are equal: content, structured
content, ``isError``, masking and ``_meta`` (``tests.parity.side_by_side``
takes out the transport's ``serverInfo`` stamp). The tools come from the
result catalogue of ``tests/test_result_parity.py``: text, structured output,
a tool's own ``_meta``, an image, several content blocks, an ``isError``
result, an error the server masks and one it does not.

The peer exists only for FastMCP 4.1, so on the other lines these tests skip.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastmcp import FastMCP
from fastmcp.server.extensions import ServerExtension
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from tests.helpers import needs_peer
from tests.parity import Extension, side_by_side
from tests.plain_calls import MODES, PlainClient, count_workflows, wire
from tests.ports import run_server_async
from tests.test_result_parity import ERRORS, RETURNS, Case

pytestmark = [
    needs_peer,
    # returns_after_using_context logs: FastMCP warns that logging is deprecated at 2026-07-28.
    pytest.mark.filterwarnings("ignore:The logging capability is deprecated"),
]

#: What each catalogue tool stands for here.
TOOLS = {
    "returns_str": "text",
    "returns_pydantic_model": "structured output",
    "returns_tool_result_with_structured_and_meta": "structured output and the tool's _meta",
    "returns_after_using_context": "a body that logs and reports progress",
    "returns_image_helper": "an image",
    "returns_list_of_content_blocks": "several content blocks",
    "returns_mixed_content_and_values": "blocks, an image and plain values",
    "returns_tool_result_is_error": "an isError result the tool returns",
    "raises_value_error": "an error the server masks",
    "raises_tool_error": "an error it does not mask (ToolError)",
}
CASES: list[Case] = [case for case in (*RETURNS, *ERRORS) if case.fn.__name__ in TOOLS]


def served(extension: ServerExtension) -> FastMCP:
    """The tools under one name, on a server that masks error details."""
    mcp = FastMCP("sync-parity", mask_error_details=True)
    mcp.add_extension(extension)
    for case in CASES:
        mcp.tool(case.fn, name=case.fn.__name__, task=True, **case.tool_options)
    return mcp


def test_every_tool_is_in_the_catalogue() -> None:
    assert sorted(case.fn.__name__ for case in CASES) == sorted(TOOLS)


@pytest.mark.parametrize("mode", MODES)
async def test_a_plain_call_answers_what_the_peers_inline_run_answers(
    mode: str,
    temporal_tasks: Callable[..., TemporalTasks],
    temporal_client: TemporalClient,
    task_queue: str,
) -> None:
    async def scenario(extension: Extension) -> list[Any]:
        async with (
            run_server_async(served(extension())) as url,
            PlainClient(url, mode=mode) as client,  # type: ignore[arg-type]
        ):
            return [
                {case.fn.__name__: wire(await client.call_tool_mcp(case.name, case.arguments))}
                for case in CASES
            ]

    peer, ours = await side_by_side(scenario, lambda: temporal_tasks())
    # What the peer answered is what an inline call answers: masked, verbatim, an image.
    first = {name: result["content"][0] for item in peer for name, result in item.items()}
    assert first["raises_value_error"]["text"] == "Error calling tool 'raises_value_error'"
    assert "(verbatim, even when masking)" in first["raises_tool_error"]["text"]
    assert first["returns_image_helper"]["type"] == "image"
    for expected, got in zip(peer, ours, strict=True):
        assert got == expected
    # The peer ran each call inline; each of ours was a task's workflow.
    assert await count_workflows(temporal_client, task_queue, len(CASES)) == len(CASES)
