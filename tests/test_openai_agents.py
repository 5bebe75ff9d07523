"""An OpenAI Agents SDK agent inside one of our workflow tools, its plugin beside ours.

``examples/agents/openai_agent.py``: two model turns (activities) around one tool
call (an activity), each reported as a progress line, then the user's approval
through ``ask``. Called with a plain ``tools/call`` over HTTP, on an encrypting
client; its histories replay, and the recorded ones are in the replay gate.
"""

from __future__ import annotations

import importlib
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client as TemporalClient

pytest.importorskip(
    "temporalio.openai_agents",
    reason="needs the openai-agents extra: pip install 'fastmcp-temporal[openai-agents]'",
)
pytest.importorskip(
    "pydantic_ai.durable_exec.temporal",
    reason="needs pydantic-ai (examples.agents.server hosts all three frameworks)",
)
pytest.importorskip(
    "temporalio.langgraph",
    reason="needs the langgraph extra (examples.agents.server hosts all three frameworks)",
)

from agents import ModelResponse, Usage
from agents.mcp import MCPServerStreamableHttp
from fastmcp import Client, FastMCP
from openai.types.responses import ResponseFunctionToolCall
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents.testing import ResponseBuilders, TestModel, TestModelProvider

from examples.agents.openai_agent import OpenAITriage
from examples.agents.server import agent_plugins, build
from examples.agents.triage import TICKET
from fastmcp_temporal import TemporalTasks, workflow_tool
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.workflows.remote_models import CALL_TOOL_ACTIVITY
from tests.agent_runs import (
    VERDICT,
    activities,
    call_plainly,
    encrypting,
    progress_lines,
    record,
    replays,
    task_plugin,
)
from tests.histories.replay import load_history
from tests.ports import run_server_async
from tests.test_examples import SNIPPETS

#: The recorded run in the replay gate (``RECORD_AGENT_HISTORIES=1`` rewrites it).
RECORDED = "agents/openai_triage"
MODEL_CALL = "invoke_model_activity"


def openai_plugin() -> OpenAIAgentsPlugin:
    (plugin,) = [p for p in agent_plugins() if isinstance(p, OpenAIAgentsPlugin)]
    return plugin


async def test_the_agent_answers_a_hosts_plain_call_durably_and_sealed(
    temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    client = await encrypting(temporal_client)
    server = build(client=client, task_queue=task_queue, data_dir=tmp_path)
    run = await call_plainly(server, "openai_triage", client, task_queue)

    assert run.result == {"ticket": TICKET, "verdict": VERDICT, "approved": True}
    assert activities(run.body) == [MODEL_CALL, "customer_plan", MODEL_CALL]
    steps = ["model turn 1", "tool call: customer_plan", "model turn 2"]
    assert await progress_lines(client, run.body) == steps
    assert run.heard == steps, "each step line reached the host's call, the last one too"
    # The prompt, the tool's answer and the verdict are sealed in both histories.
    for text in (run.task_text, run.body_text):
        assert "login broken" not in text and "ada@example.com" not in text
        assert "enterprise" not in text
    # The OpenAI plugin first: its converter step takes only the SDK default.
    for history in (run.task, run.body):
        assert await replays(history, [openai_plugin(), task_plugin([OpenAITriage])])
    record(RECORDED, run)


@pytest.mark.parametrize("suffix", ["", ".body"])
async def test_the_recorded_run_replays(suffix: str) -> None:
    """The replay gate for the example: a recorded run replays on today's code."""
    history = load_history(f"{RECORDED}{suffix}")
    assert await replays(history, [openai_plugin(), task_plugin([OpenAITriage])])


class ToolsModel(TestModel):
    """First turn: both tools at once; second: their answers, joined."""

    def __init__(self) -> None:
        # TestModel calls its callable with no conversation: get_response answers instead.
        super().__init__(lambda: ResponseBuilders.output_message(""))

    async def get_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        outputs = [
            item["output"]
            for item in input
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        if outputs:  # a plain tool's text, or an MCP tool's content blocks
            texts = [o if isinstance(o, str) else o[0]["text"] for o in outputs]
            return ResponseBuilders.output_message("; ".join(sorted(texts)))
        calls = [
            ResponseFunctionToolCall(
                arguments=json.dumps(arguments), call_id=name, name=name, type="function_call"
            )
            for name, arguments in (
                ("service_status", {"service": "login"}),
                ("lookup", {"topic": "login"}),
            )
        ]
        return ModelResponse(output=calls, usage=Usage(), response_id=None)


async def test_the_agents_mcp_tools_come_through_remote_and_the_plugins_servers(
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``docs/snippets/openai_mcp_tools.py``: a function tool calling our ``remote("desk")``
    beside the plugin's ``temporal_mcp_server("docs")``, in one agent."""
    monkeypatch.syspath_prepend(str(SNIPPETS))  # the sandbox re-imports the workflow by name
    support_agent = importlib.import_module("openai_mcp_tools").SupportAgent
    desk, docs = FastMCP("desk"), FastMCP("docs")

    @desk.tool
    def service_status(service: str) -> str:
        return f"{service} is degraded"

    @docs.tool
    def lookup(topic: str) -> str:
        return f"{topic}: clear the session cookie"

    async with run_server_async(docs) as docs_url:
        plugin = OpenAIAgentsPlugin(
            model_provider=TestModelProvider(ToolsModel()),
            model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30)),
            mcp_servers={"docs": lambda: MCPServerStreamableHttp(params={"url": docs_url})},
        )
        server = FastMCP("support")
        server.add_extension(
            TemporalTasks(
                client=temporal_client,
                task_queue=task_queue,
                data_dir=tmp_path,
                remote_servers={"desk": lambda: Client(desk)},
                plugins=[plugin],
            )
        )
        server.add_tool(workflow_tool(support_agent))
        async with Client(server) as client:
            task = await call_tool_task(client, "support_agent", {"question": "login broken"})
            result = await task.result(timeout=60)
    assert result.data == "login is degraded; login: clear the session cookie"
    body = temporal_client.get_workflow_handle(f"{workflow_id_for(task.task_id, None)}-body")
    steps = activities(await body.fetch_history())
    # The docs server's tools listed for the model (once: the plugin caches the list),
    # the model's turn, both tools at once (each an activity), the model's answer.
    assert steps[:2] == ["temporalio.mcp.docs.list-tools", MODEL_CALL], steps
    assert sorted(steps[2:4]) == [CALL_TOOL_ACTIVITY, "temporalio.mcp.docs.call-tool"], steps
    assert steps[4:] == [MODEL_CALL], steps
