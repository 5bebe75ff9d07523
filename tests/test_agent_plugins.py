"""Our plugin beside the agent frameworks' plugins: one worker, one converter, every order.

The OpenAI Agents SDK's plugin sets a payload converter of its own and refuses
any other; pydantic-ai's keeps any pydantic converter; LangGraph's sets none.
``TaskPayloadConverter`` (``server/core/task_payloads.py``) writes the task's
models as ours always did and the OpenAI SDK's payloads as its plugin does,
under our codec. On a worker (``TemporalTasks(plugins=[...])``) the plugins
compose in any order; on a client or replayer, whose plugins each take the
converter in turn, the OpenAI plugin goes first.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from temporalio.client import Client as TemporalClient
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import DataConverter, ExternalStorage
from temporalio.worker import Replayer

pytest.importorskip("temporalio.openai_agents", reason="needs the openai-agents extra")
pytest.importorskip("temporalio.langgraph", reason="needs the langgraph extra")
pytest.importorskip(
    "pydantic_ai.durable_exec.temporal", reason="needs pydantic-ai (the test extra)"
)

from agents import ModelResponse, ModelSettings, Usage
from agents.items import TResponseStreamEvent
from langchain_core.messages import HumanMessage
from openai._models import construct_type
from openai.types.responses import ResponseFunctionToolCall, ResponseTextDeltaEvent
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.langgraph import LangGraphPlugin
from temporalio.openai_agents import OpenAIAgentsPlugin, OpenAIPayloadConverter

from examples.agents.langgraph_agent import triage_graph
from examples.agents.server import agent_plugins, build
from examples.agents.triage import TICKET
from fastmcp_temporal import McpTasksPlugin
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.core.codec import AesGcmCodec, task_data_converter
from fastmcp_temporal.server.core.task_payloads import (
    TaskPayloadConverter,
    outer_converter_for,
    payload_converter_for,
    with_plugin_payloads,
)
from fastmcp_temporal.server.payloads.payload_store import DiskStorageDriver
from fastmcp_temporal.workflows.models import DEFAULT_MAX_PAYLOAD_BYTES, LegPolicy
from tests.agent_runs import VERDICT, approve
from tests.histories.paths import TEST_ENCRYPTION_KEY

OPENAI = payload_converter_for(OpenAIPayloadConverter)


def replayer_converter(plugins: list[Any]) -> DataConverter:
    """The converter a replayer (or a client) gets from ``plugins``, applied in order."""
    return Replayer(workflows=[], plugins=plugins)._config["data_converter"]  # type: ignore[return-value]


def ours() -> McpTasksPlugin:
    return McpTasksPlugin(FastMCP("composed"), encryption_key=TEST_ENCRYPTION_KEY)


def test_only_the_openai_plugin_needs_a_converter_of_its_own() -> None:
    langgraph = LangGraphPlugin(graphs={"triage": triage_graph()})
    assert outer_converter_for([PydanticAIPlugin(), langgraph]) is None
    assert outer_converter_for([OpenAIAgentsPlugin()]) is OpenAIPayloadConverter
    assert outer_converter_for([PydanticAIPlugin(), OpenAIAgentsPlugin()]) is OpenAIPayloadConverter
    assert outer_converter_for([OpenAIAgentsPlugin(), PydanticAIPlugin()]) is OpenAIPayloadConverter


@pytest.mark.parametrize("order", [["openai", "ours"], ["openai", "ours", "pydantic-ai"]])
def test_after_the_openai_plugin_ours_keeps_its_converter_and_adds_our_codec(
    order: list[str],
) -> None:
    made = {"openai": OpenAIAgentsPlugin, "ours": ours, "pydantic-ai": PydanticAIPlugin}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pydantic-ai's keeps ours without a word
        converter = replayer_converter([made[name]() for name in order])
    assert converter.payload_converter_class is OPENAI
    assert isinstance(converter.payload_codec, AesGcmCodec) and converter.payload_codec.encrypts


def test_pydantic_ais_plugin_between_replaces_the_openai_converter() -> None:
    """Its converter step keeps pydantic converters only: it puts its own in the OpenAI
    one's place (with a warning), which ours then keeps; so the OpenAI plugin's payloads
    lose their converter. Order a client's plugins OpenAI, ours, pydantic-ai."""
    with pytest.warns(UserWarning, match="non-Pydantic Temporal payload converter"):
        converter = replayer_converter([OpenAIAgentsPlugin(), PydanticAIPlugin(), ours()])
    assert converter.payload_converter_class.__name__ == (
        "TaskPayloadConverter[PydanticAIPayloadConverter]"
    )


def test_before_the_openai_plugin_ours_is_refused_as_every_converter_is(
    temporal_client: TemporalClient,
) -> None:
    """Its check wants the SDK default: on temporalio 1.35 it refuses even its own converter
    (``DataConverter.payload_converter`` is a transfer-type wrapper around it). On a
    replayer, its own words are all there is; on a client, ours say which order works."""
    with pytest.raises(ValueError, match="must be of type OpenAIPayloadConverter"):
        replayer_converter([ours(), OpenAIAgentsPlugin()])
    config = {**temporal_client.config(), "plugins": [ours(), OpenAIAgentsPlugin()]}
    with pytest.raises(ValueError, match=r"put OpenAIAgentsPlugin before it: plugins=\["):
        TemporalClient(**config)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be of type OpenAIPayloadConverter"):
        OpenAIAgentsPlugin().configure_client(
            {"data_converter": DataConverter(payload_converter_class=OpenAIPayloadConverter)}  # type: ignore[typeddict-item]
        )


def test_temporal_tasks_composes_the_converter_under_our_codec_and_store(
    temporal_client: TemporalClient, tmp_path: Path
) -> None:
    """What ``TemporalTasks(plugins=...)`` does to the client it runs on."""
    driver = DiskStorageDriver(tmp_path, max_payload_size=DEFAULT_MAX_PAYLOAD_BYTES)
    config = temporal_client.config()
    config["data_converter"] = task_data_converter(
        TEST_ENCRYPTION_KEY, payload_storage=ExternalStorage(drivers=[driver])
    )
    client = TemporalClient(**config)
    composed = with_plugin_payloads(client, [PydanticAIPlugin(), OpenAIAgentsPlugin()])
    assert composed.data_converter.payload_converter_class is OPENAI
    assert composed.data_converter.payload_codec is client.data_converter.payload_codec
    assert composed.data_converter.external_storage is client.data_converter.external_storage
    assert composed.service_client is client.service_client
    # Without a plugin that needs its own converter, the client stays as it is.
    assert with_plugin_payloads(client, [PydanticAIPlugin()]) is client


def test_each_payload_goes_to_its_own_converter() -> None:
    converter = OPENAI()
    assert isinstance(converter, TaskPayloadConverter)
    call = ResponseFunctionToolCall(arguments="{}", call_id="c", name="t", type="function_call")
    response = ModelResponse(output=[call], usage=Usage(), response_id=None)
    # The OpenAI SDK's payloads exactly as its plugin writes them (unset fields left out).
    for value in (response, {"model_settings": ModelSettings(), "input": [call]}):
        (theirs,) = OpenAIPayloadConverter().to_payloads([value])
        (plain,) = PydanticPayloadConverter().to_payloads([value])
        assert converter.to_payloads([value]) == [theirs] != [plain]
    (read,) = converter.from_payloads(converter.to_payloads([response]), [ModelResponse])
    assert read == response
    # The task's models with every field written: a worker with other defaults reads
    # the policy the task started with.
    (policy,) = converter.to_payloads([LegPolicy(heartbeat_timeout_s=2)])
    assert json.loads(policy.data) == LegPolicy(heartbeat_timeout_s=2).model_dump(mode="json")
    # Everything else as pydantic JSON: a LangChain message keeps its ``type``.
    (message,) = converter.to_payloads([{"messages": [HumanMessage("hi")]}])
    assert json.loads(message.data)["messages"][0]["type"] == "human"


def test_a_value_goes_to_the_openai_converter_by_what_it_holds_at_any_depth() -> None:
    """Nested OpenAI values are written as its plugin writes them; a container that
    also holds another framework's model is pydantic JSON, which keeps that model's
    fields (a LangChain message's ``type``)."""
    converter = OPENAI()
    call = ResponseFunctionToolCall(arguments="{}", call_id="c", name="t", type="function_call")
    for nested in ({"state": {"call": call}}, [[call]]):
        assert converter.to_payloads([nested]) == OpenAIPayloadConverter().to_payloads([nested])
    (mixed,) = converter.to_payloads([{"messages": [HumanMessage("hi")], "call": call}])
    assert json.loads(mixed.data)["messages"][0]["type"] == "human"


def test_a_drifted_stream_event_is_read_leniently_under_a_deep_hint() -> None:
    """The plugin's streaming activity returns ``list[TResponseStreamEvent]`` (a list of
    an annotated union): read by the OpenAI converter, whose fallback takes an event
    that lacks a field the SDK's types require, as its plugin alone would."""
    converter = OPENAI()
    drifted = construct_type(
        type_=ResponseTextDeltaEvent,
        value={
            "type": "response.output_text.delta",
            "delta": "x",
            "item_id": "i",
            "output_index": 0,
            "content_index": 0,
            "sequence_number": 1,
        },  # no ``logprobs``
    )
    payloads = converter.to_payloads([[drifted]])
    ((read,),) = converter.from_payloads(payloads, [list[TResponseStreamEvent]])  # type: ignore[list-item]
    assert isinstance(read, ResponseTextDeltaEvent) and read.delta == "x"


def test_a_subclass_of_the_openai_converter_is_for_the_openai_types_only() -> None:
    """Recognised by its base: LangGraph's messages stay pydantic JSON beside it."""

    class Mine(OpenAIPayloadConverter):
        pass

    converter = payload_converter_for(Mine)()
    (message,) = converter.to_payloads([{"messages": [HumanMessage("hi")]}])
    assert json.loads(message.data)["messages"][0]["type"] == "human"


@pytest.mark.parametrize("reverse", [False, True], ids=["openai-first", "pydantic-ai-first"])
async def test_the_three_frameworks_share_one_worker_in_either_order(
    temporal_client: TemporalClient, task_queue: str, tmp_path: Path, reverse: bool
) -> None:
    """``TemporalTasks(plugins=...)``: worker plugins, after ours; their order is free."""
    plugins = agent_plugins()
    server = build(
        client=temporal_client,
        task_queue=task_queue,
        data_dir=tmp_path,
        plugins=list(reversed(plugins)) if reverse else plugins,
    )
    async with Client(server, elicitation_handler=approve) as client:
        for tool in ("openai_triage", "langgraph_triage", "triage_ticket"):
            task = await call_tool_task(client, tool, {"ticket": TICKET})
            result = await task.result(timeout=60)
            assert result.structured_content == {
                "ticket": TICKET,
                "verdict": VERDICT,
                "approved": True,
            }, tool


async def test_a_clients_own_plugins_still_reach_the_worker_beside_the_openai_one(
    temporal_client: TemporalClient, task_queue: str, tmp_path: Path
) -> None:
    """LangGraph's plugin on the client it is given, the OpenAI one to ``TemporalTasks``:
    the client gets twins (with the payload store, with the OpenAI converter), and the
    worker on them still gets LangGraph's graphs (a worker inherits its client's
    plugins; a twin has none). Before, they were dropped: the graph's workflow did not
    even validate."""
    openai, langgraph, pydantic_ai = agent_plugins()
    config = temporal_client.config()
    config["plugins"] = [langgraph]
    client = TemporalClient(**config)
    server = build(
        client=client, task_queue=task_queue, data_dir=tmp_path, plugins=[openai, pydantic_ai]
    )
    async with Client(server, elicitation_handler=approve) as mcp_client:
        task = await call_tool_task(mcp_client, "langgraph_triage", {"ticket": TICKET})
        result = await task.result(timeout=60)
    assert result.structured_content == {"ticket": TICKET, "verdict": VERDICT, "approved": True}
