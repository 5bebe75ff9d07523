"""The frameworks' agents inside workflow tools survive a killed worker and stop when cancelled.

Both agents (``tests.processes.agents_gated``: the examples' agents, their tool
gated) run at once. Killed with SIGKILL while each waits in its tool (its first
model turn done), the next worker resumes them after that turn: the model is
called twice in all, the second time by the new worker. Cancelled there, the
task ends ``cancelled``, the tool's activity is cancelled, and the model is
never asked again.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from fastmcp import Client, FastMCP
from temporalio.client import Client as TemporalClient

pytest.importorskip("temporalio.openai_agents", reason="needs the openai-agents extra")
pytest.importorskip("temporalio.langgraph", reason="needs the langgraph extra")

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from tests import forks
from tests.agent_runs import VERDICT, activities
from tests.helpers import eventually, front_end, kill
from tests.processes import agents_gated_server
from tests.processes.running import Process

#: Each framework's gated tool, and the activity its model calls run as.
AGENTS = {"gated_openai": "invoke_model_activity", "gated_graph": "gated.model"}
TOOL_STARTED = {"gated_openai": "openai-started-*", "gated_graph": "langgraph-started-*"}


def worker(address: str, task_queue: str, markers: Path) -> forks.Child:
    """A worker process for the gated agents, their markers in ``markers``."""
    args = ["tests.processes.worker", address, task_queue, "tests.processes.agents_gated_server"]
    log = markers / f"worker-{len(list(markers.glob('worker-*')))}.log"
    return Process(
        "worker", [sys.executable, "-m", *args], {"AGENT_MARKERS": str(markers)}, log
    ).popen


def model_calls(markers: Path) -> list[tuple[int, int]]:
    """``(pid, turn)`` of every model call, in order."""
    lines = (markers / "model-calls").read_text().split("\n")
    return [(int(pid), int(turn)) for pid, turn in (line.split() for line in lines if line)]


@pytest.mark.chaos
async def test_a_worker_killed_between_the_turns_resumes_after_the_first(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    first = worker(temporal_server.address, task_queue, tmp_path)
    second = None
    try:
        served = front_end(temporal_client, task_queue, agents_gated_server.mcp)
        async with Client(served) as client:
            tasks = {tool: await call_tool_task(client, tool, {"ticket": "t"}) for tool in AGENTS}
            await eventually(
                lambda: all(any(tmp_path.glob(g)) for g in TOOL_STARTED.values()), timeout=90
            )
            kill(first)
            (tmp_path / "release").write_text("")
            second = worker(temporal_server.address, task_queue, tmp_path)
            results = {tool: await task.result(timeout=120) for tool, task in tasks.items()}
    finally:
        kill(first)
        if second is not None:
            kill(second)
    assert {tool: result.data for tool, result in results.items()} == dict.fromkeys(AGENTS, VERDICT)
    calls = model_calls(tmp_path)
    assert sorted(calls) == sorted([(first.pid, 1), (second.pid, 2)] * 2), calls
    for tool, model in AGENTS.items():
        body = temporal_client.get_workflow_handle(
            f"{workflow_id_for(tasks[tool].task_id, None)}-body"
        )
        assert activities(await body.fetch_history()).count(model) == 2, tool


async def test_cancelling_the_task_stops_the_agent_between_steps(
    temporal_tasks: type[TemporalTasks],
    temporal_client: TemporalClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENT_MARKERS", str(tmp_path))
    server = FastMCP("agents-cancelled")
    server.add_extension(temporal_tasks(plugins=agents_gated_server.plugins()))
    server.mount(agents_gated_server.mcp)
    async with Client(server) as client:
        tasks = {tool: await call_tool_task(client, tool, {"ticket": "t"}) for tool in AGENTS}
        await eventually(lambda: all(any(tmp_path.glob(g)) for g in TOOL_STARTED.values()))
        for task in tasks.values():
            await task.cancel()
        finals = {tool: await task.wait(timeout=60) for tool, task in tasks.items()}
        assert {tool: final.status for tool, final in finals.items()} == dict.fromkeys(
            AGENTS, "cancelled"
        )
        # The task's end asks Temporal to cancel its body (parent close policy
        # REQUEST_CANCEL), which the body's worker then applies a moment later:
        # so the in-process worker must still run (the client still open) here.
        for tool in AGENTS:
            body = temporal_client.get_workflow_handle(
                f"{workflow_id_for(tasks[tool].task_id, None)}-body"
            )
            async with asyncio.timeout(60):
                while (status := (await body.describe()).status.name) == "RUNNING":
                    await asyncio.sleep(0.1)
            assert status == "CANCELED", tool
        cancelled = [tmp_path / "openai-cancelled", tmp_path / "langgraph-cancelled"]
        await eventually(lambda: all(marker.exists() for marker in cancelled))
    assert [turn for _, turn in model_calls(tmp_path)] == [1, 1], "no model turn after the cancel"


async def test_each_examples_model_answers_the_turn_the_conversation_is_at() -> None:
    """What a worker that takes over has: a model of its own process, never asked before,
    and the conversation so far. Each example's scripted model, new, answers the second
    turn from that alone (a model counting turns in memory would answer the first)."""
    pytest.importorskip("pydantic_ai", reason="needs the agents extra")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from pydantic_ai import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart

    from examples.agents import langgraph_agent, openai_agent
    from examples.pydantic_ai_agent.agent import scripted_model

    tool_output = {"type": "function_call_output", "call_id": "c1", "output": "enterprise"}
    turn = await openai_agent.ScriptedModel().get_response(None, [tool_output])
    assert turn.output[0].type == "message"
    assert turn.output[0].content[0].text == VERDICT  # type: ignore[union-attr]

    asked = AIMessage("", tool_calls=[{"name": "customer_plan", "args": {}, "id": "call-1"}])
    conversation = [HumanMessage("ticket"), asked, ToolMessage("enterprise", tool_call_id="call-1")]
    update = await langgraph_agent.call_model({"messages": conversation})
    assert update["messages"][0].content == VERDICT

    messages = [
        ModelRequest.user_text_prompt("ticket"),
        ModelResponse(parts=[ToolCallPart("customer_plan", {"email": "ada@example.com"})]),
        ModelRequest(parts=[ToolReturnPart("customer_plan", "enterprise")]),
    ]
    answer = scripted_model(messages, None)  # type: ignore[arg-type]
    assert answer.parts == [TextPart(VERDICT)]
