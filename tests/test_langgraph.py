"""A LangGraph graph inside one of our workflow tools, its plugin beside ours.

``examples/agents/langgraph_agent.py``: two model turns around one tool call,
each a graph node run as an activity and reported as a progress line, then the
user's approval through ``ask``. Called with a plain ``tools/call`` over HTTP,
on an encrypting client; its histories replay, and the recorded ones are in the
replay gate.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client as TemporalClient

pytest.importorskip(
    "temporalio.langgraph",
    reason="needs the langgraph extra: pip install 'fastmcp-temporal[langgraph]'",
)
pytest.importorskip(
    "pydantic_ai.durable_exec.temporal",
    reason="needs pydantic-ai (examples.agents.server hosts all three frameworks)",
)
pytest.importorskip(
    "temporalio.openai_agents",
    reason="needs the openai-agents extra (examples.agents.server hosts all three frameworks)",
)

from temporalio.langgraph import LangGraphPlugin

from examples.agents.langgraph_agent import LangGraphTriage, triage_graph
from examples.agents.server import build
from examples.agents.triage import TICKET
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

#: The recorded run in the replay gate (``RECORD_AGENT_HISTORIES=1`` rewrites it).
RECORDED = "agents/langgraph_triage"


def langgraph_plugin() -> LangGraphPlugin:
    return LangGraphPlugin(graphs={"triage": triage_graph()})


async def test_the_graph_answers_a_hosts_plain_call_durably_and_sealed(
    temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    client = await encrypting(temporal_client)
    server = build(client=client, task_queue=task_queue, data_dir=tmp_path)
    run = await call_plainly(server, "langgraph_triage", client, task_queue)

    assert run.result == {"ticket": TICKET, "verdict": VERDICT, "approved": True}
    assert activities(run.body) == ["triage.model", "triage.tools", "triage.model"]
    steps = ["model turn 1", "tool call: customer_plan", "model turn 2"]
    assert await progress_lines(client, run.body) == steps
    assert run.heard == steps, "each step line reached the host's call, the last one too"
    # The prompt, the tool's answer and the verdict are sealed in both histories.
    for text in (run.task_text, run.body_text):
        assert "login broken" not in text and "ada@example.com" not in text
        assert "enterprise" not in text
    # LangGraph's plugin sets no converter: either order replays.
    for history in (run.task, run.body):
        assert await replays(history, [task_plugin([LangGraphTriage]), langgraph_plugin()])
        assert await replays(history, [langgraph_plugin(), task_plugin([LangGraphTriage])])
    record(RECORDED, run)


@pytest.mark.parametrize("suffix", ["", ".body"])
async def test_the_recorded_run_replays(suffix: str) -> None:
    """The replay gate for the example: a recorded run replays on today's code."""
    history = load_history(f"{RECORDED}{suffix}")
    assert await replays(history, [task_plugin([LangGraphTriage]), langgraph_plugin()])
