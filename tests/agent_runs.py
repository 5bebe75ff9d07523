"""What the agent frameworks' tests share: a host-like call, and reading what the agent did.

Each framework's test (``test_openai_agents``, ``test_langgraph``) calls its agent
tool of ``examples/agents`` with a plain ``tools/call`` over streamable HTTP (a
client without the tasks extension, as Claude Code and Codex are), on an
encrypting Temporal client, then reads the task's and the tool workflow's
histories: the agent's steps as activities, its progress lines as the memo
writes ``tasks/get`` reads, no plaintext of the prompt, and a replay on the
current code. ``RECORD_AGENT_HISTORIES=1`` writes those histories into
``tests/histories/agents/`` for the replay gate.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from fastmcp import FastMCP
from fastmcp.client.elicitation import ElicitResult
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from examples.agents.triage import TICKET
from fastmcp_temporal import McpTasksPlugin
from fastmcp_temporal.server.core.codec import task_data_converter
from fastmcp_temporal.server.protocol.call_progress import LINE_JOIN
from fastmcp_temporal.workflows.models import BODY_PROGRESS_MEMO
from tests.histories.paths import TEST_ENCRYPTION_KEY
from tests.histories.replay import HISTORIES
from tests.plain_calls import progress_sink
from tests.ports import run_server_async
from tests.remote_harness import history_text
from tests.test_sync_calls import PlainClient, workflows

#: The approval the examples ask for, as a host's user gives it.
APPROVED = ElicitResult(action="accept", content={"approve": True})
#: What each example agent concludes (two model turns around one tool call).
VERDICT = "escalate: enterprise customer"


async def approve(message: str, response_type: Any, params: Any, context: Any) -> ElicitResult:
    assert message == f"The agent suggests {VERDICT!r}. Go ahead?"
    return APPROVED


async def encrypting(temporal_client: TemporalClient) -> TemporalClient:
    """A client of the session's Temporal whose payloads are sealed with the test key."""
    config = temporal_client.config()
    config["data_converter"] = task_data_converter(TEST_ENCRYPTION_KEY)
    return TemporalClient(**config)


@dataclasses.dataclass
class AgentRun:
    """A finished plain call of an agent tool, and the histories it left."""

    result: dict[str, Any] | None
    #: Each line the call's ``notifications/progress`` carried, in order (several may
    #: share one: they are coalesced, joined by ``LINE_JOIN``).
    heard: list[str]
    task: WorkflowHistory
    body: WorkflowHistory
    #: Each history as JSON with every payload's bytes decoded (what an operator can read).
    task_text: str
    body_text: str


async def call_plainly(
    server: FastMCP, tool: str, temporal_client: TemporalClient, task_queue: str
) -> AgentRun:
    """``tools/call`` of ``tool`` on ``server`` over HTTP, as a host makes it."""
    seen, on_progress = progress_sink()
    async with (
        run_server_async(server) as url,
        PlainClient(url, elicitation_handler=approve, progress_handler=on_progress) as client,  # type: ignore[arg-type]
    ):
        result = await client.call_tool(tool, {"ticket": TICKET})
    (workflow_id,) = [w for w in await _both(temporal_client, task_queue) if w.endswith("-body")]
    task_id = workflow_id.removesuffix("-body")
    return AgentRun(
        result=result.structured_content,
        heard=[line for _, _, message in seen for line in (message or "").split(LINE_JOIN)],
        task=await temporal_client.get_workflow_handle(task_id).fetch_history(),
        body=await temporal_client.get_workflow_handle(workflow_id).fetch_history(),
        task_text=await history_text(temporal_client, task_id),
        body_text=await history_text(temporal_client, workflow_id),
    )


async def _both(temporal_client: TemporalClient, task_queue: str) -> list[str]:
    """The task workflow and its tool workflow, once visibility lists both."""
    for _ in range(100):
        found = await workflows(temporal_client, task_queue)
        if len(found) >= 2:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"the queue lists {found}")


def activities(history: WorkflowHistory) -> list[str]:
    """The activity types the history scheduled, in order."""
    scheduled = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.event_type == scheduled
    ]


async def progress_lines(temporal_client: TemporalClient, body: WorkflowHistory) -> list[str]:
    """Each progress report the tool workflow wrote to its memo (what ``tasks/get`` shows)."""
    modified = EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED
    lines: list[str] = []
    for event in body.events:
        memo = event.workflow_properties_modified_event_attributes.upserted_memo.fields
        if event.event_type == modified and BODY_PROGRESS_MEMO in memo:
            (report,) = await temporal_client.data_converter.decode([memo[BODY_PROGRESS_MEMO]])
            lines.append(report["message"])
    return lines


async def replays(history: WorkflowHistory, plugins: Sequence[Any]) -> bool:
    """Whether ``history`` replays with ``plugins`` (a worker's, in a replayer's order)."""
    replayer = Replayer(workflows=[], plugins=list(plugins))
    return (await replayer.replay_workflow(history)).replay_failure is None


def task_plugin(workflows: Sequence[type]) -> McpTasksPlugin:
    """Ours, as a replayer of the examples' histories needs it (the test key decrypts)."""
    return McpTasksPlugin(
        FastMCP("replay"), encryption_key=TEST_ENCRYPTION_KEY, workflows=list(workflows)
    )


def record(name: str, run: AgentRun) -> None:
    """Write the run's histories into the replay gate, when asked to."""
    if os.environ.get("RECORD_AGENT_HISTORIES"):
        (HISTORIES / f"{name}.json").write_text(run.task.to_json())
        (HISTORIES / f"{name}.body.json").write_text(run.body.to_json())
