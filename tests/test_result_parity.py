"""Result parity: a task's inlined result is the synchronous ``tools/call`` result.

SEP-2663 says the ``result`` of a ``completed`` task is "the CallToolResult the
``tools/call`` would have returned". This file proves it on the raw wire for
every kind of value a FastMCP tool can return, and for every way a tool body
can fail:

* Every tool of the catalogue (``tests/parity_returns.py``: one per kind of
  value; ``tests/parity_errors.py``: one per way to fail) is registered once,
  ``TaskConfig(mode="optional")``, on a real FastMCP server with
  ``TemporalTasks``, served over streamable HTTP on 127.0.0.1.
* Each case calls the tool twice with raw JSON-RPC (``httpx``, the stateless
  2026-07-28 wire): once *without* the tasks extension in
  ``clientCapabilities`` (the synchronous ``tools/call``) and once *with* it
  (a task, polled with ``tasks/get`` until it is terminal).
* The synchronous response's ``result`` must equal the final ``tasks/get``'s
  ``result`` byte for byte: both are cut as raw slices out of the HTTP bodies
  (``member``, ``tests/parity_wire.py``), never re-encoded. The only bytes
  removed are the transport's ``serverInfo`` stamp (see
  ``without_envelope_stamp`` for why). A synchronous JSON-RPC *error* must
  likewise reappear verbatim as the ``error`` of a ``failed`` task.

Using one optional tool for both calls (rather than ``x_sync``/``x_task``
twins) matters: masked error texts and ``Unknown tool`` messages contain the
tool's name, so twins could never be byte-identical.

Cases where the task deliberately differs (a protocol fault fails the task)
stay here marked ``xfail(strict=True)`` with the reason, so any change in that
behaviour shows up at once. Results past Temporal's 2 MB payload limit (a 2.2,
a 10 and a 4 MB result) travel through the external payload store.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastmcp import FastMCP
from fastmcp.utilities.tasks import TaskConfig
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import TemporalTasks
from tests.parity_errors import ERRORS
from tests.parity_returns import CHILD, GRANDCHILD, RETURNS, Case
from tests.parity_wire import SERVER_INFO, Wire, member, without_envelope_stamp
from tests.ports import run_server_async

pytestmark = [
    # ctx.info() in two tools: FastMCP warns that logging is deprecated at 2026-07-28.
    pytest.mark.filterwarnings("ignore:The logging capability is deprecated"),
    # returns_value_violating_its_annotation: pydantic warns while serializing it.
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]

OPTIONAL = TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=50))


# =============================================================================
# The server: every tool of the catalogue, where its case mounts it
# =============================================================================


def _build_server(name: str, mask: bool) -> FastMCP:
    mcp = FastMCP(name, mask_error_details=mask)
    child = FastMCP(f"{name}-child", mask_error_details=mask)
    grandchild = FastMCP(f"{name}-grandchild", mask_error_details=mask)
    homes = {(): mcp, CHILD: child, GRANDCHILD: grandchild}
    for case in (*RETURNS, *ERRORS):
        homes[case.mount].tool(case.fn, name=case.fn.__name__, task=OPTIONAL, **case.tool_options)
    child.mount(grandchild, namespace=GRANDCHILD[-1])
    mcp.mount(child, namespace=CHILD[-1])

    @mcp.resource("memo://notes/1")
    async def note() -> str:
        return "a note"

    return mcp


# =============================================================================
# Fixtures
# =============================================================================


@pytest.fixture(scope="module")
async def wires(
    temporal_client: TemporalClient, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[bool, Wire]]:
    """One server per masking policy, each with its own task queue, for the module.

    Built once (not per test) to keep the file fast: the catalogue has ~80
    tools and every case of a policy shares its server and worker.
    """
    run = uuid.uuid4().hex[:8]
    servers = {
        mask: _build_server("parity-masked" if mask else "parity", mask) for mask in (False, True)
    }
    for mask, server in servers.items():
        server.add_extension(
            TemporalTasks(
                client=temporal_client,
                task_queue=f"parity-{run}-{int(mask)}",
                data_dir=tmp_path_factory.mktemp("parity-payloads"),
                # The call without the opt-in is the *inline* one this file compares
                # a task with; durable synchronous calls are tasks themselves.
                durable_sync_calls=False,
            )
        )
    async with (
        run_server_async(servers[False]) as plain_url,
        run_server_async(servers[True]) as masked_url,
        # No kept-alive connections: uvicorn closes one idle for 5 s, and a request sent
        # on it at that moment (a gap a loaded machine makes) fails with ReadError.
        httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_keepalive_connections=0)) as http,
    ):
        yield {False: Wire(plain_url, http), True: Wire(masked_url, http)}


# =============================================================================
# The tests
# =============================================================================


async def _assert_parity(wire: Wire, case: Case) -> None:
    sync = await wire.call_sync(case.name, case.arguments)
    created, final = await wire.call_as_task(case.name, case.arguments)
    task = final.data["result"]

    # The stamp that without_envelope_stamp removes is not lost: every task
    # response carries the very same one, on the response itself.
    stamp = created.data["result"]["_meta"][SERVER_INFO]
    assert task["_meta"][SERVER_INFO] == stamp

    if "error" in sync.data:
        # The synchronous call failed at the JSON-RPC level (only -32021 does
        # so from a tool body): the task fails with the same error object.
        assert task["status"] == "failed", final.text
        assert "result" not in task
        assert task["error"] == sync.data["error"]
        assert member(final.text, "result", "error") == member(sync.text, "error")
        return

    assert sync.data["result"]["_meta"][SERVER_INFO] == stamp
    assert task["status"] == "completed", final.text
    expected = without_envelope_stamp(member(sync.text, "result"))
    inlined = member(final.text, "result", "result")
    # Nothing of the envelope leaks into the inlined result.
    assert SERVER_INFO not in task["result"].get("_meta", {})
    # Parsed first, for a readable diff; then the bytes themselves.
    assert json.loads(inlined) == json.loads(expected)
    assert inlined == expected


def _params(cases: list[Case], masks: tuple[bool, ...]) -> list[Any]:
    params = []
    for case in cases:
        for mask in masks:
            marks = [pytest.mark.xfail(reason=case.xfail, strict=True)] if case.xfail else []
            suffix = ("-masked" if mask else "-unmasked") if len(masks) > 1 else ""
            params.append(pytest.param(case, mask, id=f"{case.name}{suffix}", marks=marks))
    return params


@pytest.mark.parametrize(("case", "mask"), _params(RETURNS, (False,)))
async def test_returned_value_is_inlined_verbatim(
    wires: dict[bool, Wire], case: Case, mask: bool
) -> None:
    await _assert_parity(wires[mask], case)


@pytest.mark.parametrize(("case", "mask"), _params(ERRORS, (False, True)))
async def test_raised_error_matches_synchronous_call(
    wires: dict[bool, Wire], case: Case, mask: bool
) -> None:
    await _assert_parity(wires[mask], case)


async def test_unknown_tool_is_not_tasked(wires: dict[bool, Wire]) -> None:
    """Control: a name no tool has gets the same answer with and without the opt-in."""
    wire = wires[False]
    sync = await wire.call_sync("no_such_tool", {})
    opted_in = await wire.request(
        "tools/call", {"name": "no_such_tool", "arguments": {}}, name="no_such_tool", tasks=True
    )
    assert sync.data["result"]["isError"] is True
    assert member(opted_in.text, "result") == member(sync.text, "result")


def test_byte_view_helpers() -> None:
    """The raw-text helpers keep bytes the parsed view would lose."""
    stamp = json.dumps(SERVER_INFO)
    text = '{"a":1.0,"b":{"x":"\\u00e9","y":null},"_meta":{"k":1,' + stamp + ':{"n":"s"}}}'
    assert member(text, "a") == "1.0"  # json.loads would give 1.0 == 1
    assert member(text, "b", "x") == '"\\u00e9"'  # escape kept, not decoded
    assert without_envelope_stamp(text) == '{"a":1.0,"b":{"x":"\\u00e9","y":null},"_meta":{"k":1}}'
    only_stamp = '{"a":[],"_meta":{' + stamp + ':{}},"z":0}'
    assert without_envelope_stamp(only_stamp) == '{"a":[],"z":0}'


def test_catalogue_is_complete() -> None:
    """Every catalogue entry is a distinct tool (a duplicate would silently shadow one)."""
    names = [case.name for case in (*RETURNS, *ERRORS)]
    assert len(names) == len(set(names))
    assert len(RETURNS) >= 60 and len(ERRORS) >= 15
