"""``sample``: a workflow tool asks the model of the client that created its task.

A real FastMCP ``Client`` with a ``sampling_handler`` answers; the server has
no model and no key. The answers are signals in the tool workflow's history,
so the history replays without asking the model again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types
from fastmcp import Client, FastMCP
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks, workflow_tool
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from tests.conftest import http_client
from tests.histories.replay import task_replayer
from tests.processes.sampling_workflows import CarefulWriter, CarelessWriter, HaikuWriter


def writers(extension: TemporalTasks) -> FastMCP:
    mcp = FastMCP("writers")
    mcp.add_extension(extension)
    for workflow_class in (HaikuWriter, CarefulWriter, CarelessWriter):
        mcp.add_tool(workflow_tool(workflow_class))
    return mcp


class ScriptedModel:
    """The client's "model": answers from a script and records what it was asked."""

    def __init__(self, *answers: str | mcp_types.CreateMessageResult) -> None:
        self.answers = list(answers)
        self.asked: list[mcp_types.CreateMessageRequestParams] = []

    async def __call__(
        self, messages: list[mcp_types.SamplingMessage], params: Any, context: Any
    ) -> str | mcp_types.CreateMessageResult:
        self.asked.append(params)
        return self.answers.pop(0)


async def test_a_workflow_tool_samples_the_clients_model_and_replays(
    temporal_tasks: Callable[..., TemporalTasks], temporal_client: TemporalClient
) -> None:
    model = ScriptedModel(
        "rain on the roof / a long draft / of many words",
        mcp_types.CreateMessageResult(
            role="assistant",
            content=mcp_types.TextContent(type="text", text="rain / roof"),
            model="client-model-7",
            stop_reason="endTurn",
        ),
    )
    async with http_client(writers(temporal_tasks()), sampling_handler=model) as client:
        task = await call_tool_task(client, "haiku_writer", {"topic": "rain"})
        result = await task.result(timeout=60)
    assert result.structured_content == {
        "first_draft": "rain on the roof / a long draft / of many words",
        "final": "rain / roof",
        "model": "client-model-7",
        "stop_reason": "endTurn",
    }
    draft, revise = model.asked
    assert draft.system_prompt == "You are a poet."
    assert (draft.max_tokens, draft.temperature) == (60, 0.2)
    assert draft.model_preferences is not None and draft.model_preferences.hints is not None
    assert [h.name for h in draft.model_preferences.hints] == ["sonnet", "gpt"]
    assert [m.role for m in revise.messages] == ["user", "assistant", "user"]
    assert isinstance(revise.messages[1].content, mcp_types.TextContent)
    assert revise.messages[1].content.text == "rain on the roof / a long draft / of many words"

    body = temporal_client.get_workflow_handle(f"{workflow_id_for(task.task_id, None)}-body")
    history = await body.fetch_history()
    answers = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    ]
    assert len(answers) == 2, "each answer of the model is one signal in the history"
    replay = await task_replayer([HaikuWriter]).replay_workflow(history)
    assert replay.replay_failure is None


async def test_a_refusal_is_a_typed_error_the_workflow_can_catch(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    declined = mcp_types.CreateMessageResult(
        role="assistant",
        content=mcp_types.TextContent(type="text", text="not about that"),
        model="client-model-7",
        stop_reason="refusal",
    )
    model = ScriptedModel(declined, declined)
    async with Client(writers(temporal_tasks()), sampling_handler=model) as client:
        caught = await call_tool_task(client, "careful_writer", {"topic": "x"})
        careful = await caught.result(timeout=60)
        uncaught = await call_tool_task(
            client, "careless_writer", {"topic": "x"}, raise_on_error=False
        )
        careless = await uncaught.result(timeout=60)
        careless_status = (await uncaught.status()).status
    assert careful.data == (
        "refused (refusal): The client's model 'client-model-7' declined: not about that"
    )
    # Uncaught, it ends the task as any raised error does: completed, isError.
    assert careless.is_error
    assert "declined: not about that" in str(careless.content[0])
    assert careless_status == "completed"


async def test_a_client_whose_handler_fails_raises_and_leaves_the_task_waiting(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    """An input response has no error variant: the client says no on its own side."""

    async def broken(messages: Any, params: Any, context: Any) -> str:
        raise RuntimeError("model offline")

    async with Client(writers(temporal_tasks()), sampling_handler=broken) as client:
        task = await call_tool_task(client, "careless_writer", {"topic": "x"})
        try:
            await task.result(timeout=60)
        except Exception as err:
            failure: Exception = err
        else:
            raise AssertionError("the handler's failure must surface")
        assert "model offline" in str(failure)
        parked = await task.status()
        assert parked.status == "input_required"
        (request,) = (parked.input_requests or {}).values()
        assert request["method"] == "sampling/createMessage"
        await task.cancel()
        assert (await task.wait(timeout=30)).status == "cancelled"
