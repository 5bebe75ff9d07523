"""What bad input does: a clear ``-32602``, no traceback, nothing changed.

Everything here runs over streamable HTTP against real FastMCP servers whose
tasks run on the session's Temporal dev server, speaking raw JSON-RPC
(``tests.wire.RawMcp``): malformed ``tasks/update`` params and answers are
``-32602`` and change nothing; oversized tool arguments are rejected up front;
and a property-based test throws random params at ``tasks/*``.
"""

from __future__ import annotations

import contextlib
import enum
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import mcp_types
import pytest
from fastmcp import Context, FastMCP
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from mcp.shared.inbound import encode_header_value
from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError
from temporalio.client import Client as TemporalClient

from tests.ports import run_server_async
from tests.raw_tasks import (
    ACCEPT,
    METHODS,
    BuildTasks,
    assert_clean,
    build_server,
    create,
    parked_and_finished,
    question,
    wait_for,
    workflow_ids_on,
)
from tests.wire import RawMcp

# -- malformed and oversized input ------------------------------------------------------------


class _Missing:
    """Marks a param left out of the request."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


async def test_malformed_updates_are_invalid_params_and_change_nothing(
    temporal_tasks: BuildTasks,
) -> None:
    """``inputResponses`` that is not an object, or an answer that is not a valid result
    for the outstanding key, is ``-32602`` with no traceback, and the task still waits
    for exactly the same keys; a valid answer afterwards still completes it."""
    async with run_server_async(build_server(temporal_tasks())) as url:
        raw = RawMcp(url)
        task_id = await create(raw, "confirm")
        parked = await wait_for(raw, task_id, "input_required")
        (key,) = parked["inputRequests"]
        cases: list[Any] = [
            [],
            [{key: ACCEPT}],
            "accept",
            None,
            MISSING,
            42,
            {key: {"action": 5}},
            {key: {"action": "maybe"}},
            {key: {"action": "accept", "content": 5}},
            {key: {"action": "accept", "content": {"nested": {"too": "deep"}}}},
            {key: "accept"},
            {key: 5},
            {key: None},
            {key: [ACCEPT]},
            {key: {}},
            {key: {"action": 5}, "not-outstanding": ACCEPT},  # one bad answer rejects all
        ]
        for case in cases:
            params: dict[str, Any] = {"taskId": task_id}
            if case is not MISSING:
                params["inputResponses"] = case
            status, body = await raw.call("tasks/update", params)
            assert body.get("error", {}).get("code") == -32602, (case, status, body)
            assert status < 500, (case, status)
            assert_clean(body)
            now = await raw.result("tasks/get", {"taskId": task_id})
            assert now["status"] == "input_required", (case, now)
            assert now["inputRequests"] == parked["inputRequests"], case
            assert now["lastUpdatedAt"] == parked["lastUpdatedAt"], case
        await raw.result("tasks/update", {"taskId": task_id, "inputResponses": {key: ACCEPT}})
        final = await wait_for(raw, task_id, "completed", "failed")
    assert final["result"]["structuredContent"] == {"result": "confirmed"}


#: A 2 MB ceiling keeps these payloads small (the default is 100 MiB, see
#: ``tests/test_large_payloads.py`` for payloads past Temporal's own 2 MB).
LIMIT = 2_000_000


async def test_oversized_arguments_are_rejected_up_front_and_start_nothing(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient, task_queue: str
) -> None:
    """A 2.5 MB argument (over the server's ``max_payload_bytes``) is a clear ``-32602``;
    no workflow is started for it (a valid call afterwards is the only one)."""
    async with run_server_async(build_server(temporal_tasks(max_payload_bytes=LIMIT))) as url:
        raw = RawMcp(url)
        status, body = await raw.call(
            "tools/call", {"name": "done", "arguments": {"data": "x" * 2_500_000}}
        )
        assert body.get("error", {}).get("code") == -32602, (status, str(body)[:500])
        assert "too large" in body["error"]["message"]
        assert len(json.dumps(body)) < 2_000  # the argument is not echoed back
        assert_clean(body)
        valid = await create(raw, "done", {"data": "x"})
        await wait_for(raw, valid, "completed")
    ids = await workflow_ids_on(temporal_client, task_queue, valid)
    assert len(ids) == 1 and ids[0].endswith(valid), ids


async def test_an_oversized_answer_is_invalid_params_and_changes_nothing(
    temporal_tasks: BuildTasks,
) -> None:
    async with run_server_async(build_server(temporal_tasks(max_payload_bytes=LIMIT))) as url:
        raw = RawMcp(url)
        task_id = await create(raw, "confirm")
        parked = await wait_for(raw, task_id, "input_required")
        (key,) = parked["inputRequests"]
        huge = {"action": "accept", "content": {"text": "y" * 2_500_000}}
        status, body = await raw.call(
            "tasks/update", {"taskId": task_id, "inputResponses": {key: huge}}
        )
        now = await raw.result("tasks/get", {"taskId": task_id})
        await raw.result("tasks/cancel", {"taskId": task_id})
    assert now["status"] == "input_required" and now["inputRequests"] == parked["inputRequests"]
    assert body.get("error", {}).get("code") == -32602, (status, body)
    assert "too large" in body["error"]["message"]


async def test_arguments_and_answers_over_the_limit_together_fail_clearly(
    temporal_tasks: BuildTasks, temporal_client: TemporalClient
) -> None:
    """Either the answer is refused (``-32602``, task unchanged) or the task fails with a
    clear error soon after; it must not ack and then hang. Each is under the limit,
    together they are over it (the workflow's own check of the leg's input)."""
    server = FastMCP("big-answers")
    server.add_extension(temporal_tasks(max_payload_bytes=LIMIT))

    @server.tool(task=True)
    async def confirm_big(data: str, ctx: Context) -> str:
        return question() if not ctx.input_responses else f"confirmed {len(data)}"

    task_id = ""
    try:
        async with run_server_async(server) as url:
            raw = RawMcp(url)
            task_id = await create(raw, "confirm_big", {"data": "d" * 1_200_000})
            parked = await wait_for(raw, task_id, "input_required")
            (key,) = parked["inputRequests"]
            answer = {"action": "accept", "content": {"text": "y" * 1_200_000}}
            _, body = await raw.call(
                "tasks/update", {"taskId": task_id, "inputResponses": {key: answer}}
            )
            if "error" in body:
                assert body["error"]["code"] == -32602, body
                now = await raw.result("tasks/get", {"taskId": task_id})
                assert now["inputRequests"] == parked["inputRequests"]
                return
            # Acked, then stuck (the hang this guards against) fails in ``wait_for``.
            now = await wait_for(raw, task_id, "failed", "completed")
            assert now["status"] == "failed", now
            assert "too large" in now["error"]["message"]
    finally:
        if task_id:
            handle = temporal_client.get_workflow_handle(f"mcp-anon-{task_id}")
            with contextlib.suppress(Exception):
                await handle.terminate("test cleanup")


# -- property: random tasks/* params never break the server or the tasks ----------------------


class Target(enum.Enum):
    PARKED = "parked"
    FINISHED = "finished"
    ABSENT = "absent"  # no taskId at all


class Key(enum.Enum):
    OUTSTANDING = "outstanding"


_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
json_values = st.recursive(
    _json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=10,
)
#: Answers that are often close to valid results, and sometimes valid.
near_answers = st.fixed_dictionaries(
    {"action": st.sampled_from(["accept", "decline", "cancel"]) | json_values},
    optional={"content": json_values, "_meta": json_values},
)
input_responses = json_values | st.dictionaries(
    st.sampled_from([Key.OUTSTANDING]) | st.text(max_size=12),
    near_answers | json_values,
    max_size=3,
)
targets = st.sampled_from(list(Target))
RESERVED = {"taskId", "inputResponses", "_meta"}
_ELICIT_RESULT = TypeAdapter(mcp_types.ElicitResult)


def is_valid_answer(value: Any) -> bool:
    try:
        _ELICIT_RESULT.validate_python(value)
    except PydanticValidationError:
        return False
    return True


@dataclass(repr=False)
class FuzzTarget:
    raw: RawMcp
    parked: str
    key: str
    parked_view: dict[str, Any]
    finished: str
    finished_view: dict[str, Any]

    async def assert_untouched(self) -> None:
        parked = await self.raw.result("tasks/get", {"taskId": self.parked})
        assert parked["status"] == "input_required"
        assert parked["inputRequests"] == self.parked_view["inputRequests"]
        finished = await self.raw.result("tasks/get", {"taskId": self.finished})
        assert finished == self.finished_view

    def __repr__(self) -> str:  # hypothesis prints it with every falsifying example
        return f"FuzzTarget(parked={self.parked!r}, finished={self.finished!r})"


@pytest.fixture
async def fuzz_target(temporal_tasks: BuildTasks) -> AsyncIterator[FuzzTarget]:
    """One server, one parked and one finished task, shared by every example."""
    async with run_server_async(build_server(temporal_tasks())) as url:
        raw = RawMcp(url)
        parked, finished, parked_view, finished_view = await parked_and_finished(raw)
        (key,) = parked_view["inputRequests"]
        yield FuzzTarget(raw, parked, key, parked_view, finished, finished_view)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    method=st.sampled_from(METHODS),
    # About half the examples aim at the two real tasks (or omit the id).
    task_id=st.one_of(targets, targets, st.text(max_size=80), json_values),
    responses=st.just(MISSING) | input_responses,
    extra=st.dictionaries(st.text(max_size=10).filter(lambda k: k not in RESERVED), json_values),
)
async def test_random_tasks_params_are_answered_or_invalid_and_change_nothing(
    fuzz_target: FuzzTarget, method: str, task_id: Any, responses: Any, extra: dict[str, Any]
) -> None:
    """Whatever the params, the answer is a valid result or ``-32602`` (never ``-32603``,
    never a traceback), and the parked task keeps its keys, the finished one its result.

    The ``Mcp-Name`` header is sent as a correct client would (encoded with the SDK's
    ``encode_header_value``) whenever ``taskId`` is a string, so a header mismatch
    (``-32020``) would be a server bug too.
    """
    target = fuzz_target
    real = {Target.PARKED: target.parked, Target.FINISHED: target.finished}
    # Cancelling the parked task is a legitimate request that changes it; not fuzz.
    assume(not (method == "tasks/cancel" and task_id is Target.PARKED))
    if isinstance(responses, dict):
        responses = {target.key if k is Key.OUTSTANDING else k: v for k, v in responses.items()}
        # A valid answer for the outstanding key would (rightly) resume the task.
        assume(not (task_id is Target.PARKED and is_valid_answer(responses.get(target.key))))
    params: dict[str, Any] = dict(extra)
    if task_id is not Target.ABSENT:
        params["taskId"] = real[task_id] if isinstance(task_id, Target) else task_id
    if responses is not MISSING:
        params["inputResponses"] = responses
    headers = {}
    if isinstance(params.get("taskId"), str):
        headers["Mcp-Name"] = encode_header_value(params["taskId"])

    status, body = await target.raw.call(method, params, headers=headers)

    aimed = task_id.value if isinstance(task_id, Target) else type(task_id).__name__
    event(f"{method} at {aimed}: {'error' if 'error' in body else 'result'}")
    assert_clean(body)
    assert status < 500, (status, body)
    if "error" in body:
        assert body["error"]["code"] == -32602, body
    else:
        result = body["result"]
        assert isinstance(params.get("taskId"), str) and params["taskId"] in real.values()
        if method == "tasks/get":
            assert result["taskId"] == params["taskId"]
        else:
            assert set(result) - {"_meta"} == {"resultType"}, result
    await target.assert_untouched()
