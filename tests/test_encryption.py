"""Encryption at rest: what a task writes to Temporal is unreadable without the key.

The proof reads the task's raw history the way anyone with access to Temporal
can -- a client without the codec, and the ``temporal`` CLI -- and looks for
the caller's token, headers, arguments, questions, answers, result and failure
text. The same run without a key is the control that the search would find
them. Then: keys rotate (old ids keep decrypting), and a process without the
right key fails the task closed, with a message ``tasks/get`` reports.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from datetime import timedelta
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from mcp.shared.exceptions import MCPError
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import History
from temporalio.client import Client as TemporalClient
from temporalio.converter import DataConverter

from fastmcp_temporal import DevServer, LegPolicy, TemporalTasks
from fastmcp_temporal.client import ToolTask, call_tool_task
from fastmcp_temporal.server.core.codec import (
    KEY_ENV,
    AesGcmCodec,
    PayloadDecryptionError,
    parse_keys,
    task_data_converter,
)
from fastmcp_temporal.server.core.settings import env_var
from fastmcp_temporal.server.embedded.devserver import temporal_binary
from fastmcp_temporal.server.tasks import starter
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from tests.ports import run_server_async


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test chooses its keys; an exported one must not leak in."""
    monkeypatch.delenv(KEY_ENV, raising=False)


# -- the codec itself ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "ids"),
    [
        (base64.b64encode(b"k" * 32).decode(), ["default"]),
        (base64.urlsafe_b64encode(b"\xfb" * 32).decode().rstrip("="), ["default"]),
        ((b"h" * 32).hex(), ["default"]),
        (f"new:{(b'n' * 32).hex()}, old:{base64.b64encode(b'o' * 32).decode()}", ["new", "old"]),
    ],
)
def test_key_configuration_forms(spec: str, ids: list[str]) -> None:
    assert list(parse_keys(spec)) == ids
    assert AesGcmCodec.from_spec(spec).active_key_id == ids[0]


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("", "empty"),
        (base64.b64encode(b"short").decode(), "needs 32"),
        ("not base64!", "neither base64 nor hex"),
        (f"{(b'a' * 32).hex()},{(b'b' * 32).hex()}", "'id:key'"),
        (f"a:{(b'a' * 32).hex()},a:{(b'b' * 32).hex()}", "twice"),
        (f"bad id:{(b'a' * 32).hex()}", "Invalid encryption key id"),
    ],
)
def test_bad_key_configuration_is_refused_without_echoing_it(spec: str, error: str) -> None:
    with pytest.raises(ValueError, match=error) as raised:
        parse_keys(spec)
    assert (b"a" * 32).hex() not in str(raised.value)


async def test_codec_seals_opens_and_fails_closed() -> None:
    """Round trip; plaintext passes; unknown ids, swapped ids and tampering raise."""
    keys = {"k1": os.urandom(32), "k2": os.urandom(32)}
    codec = AesGcmCodec(keys, "k1")
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'{"secret": "hunter2"}')
    (sealed,) = await codec.encode([plain])
    assert sealed.metadata["encoding"] == b"binary/encrypted"
    assert sealed.metadata["encryption-key-id"] == b"k1"
    assert b"hunter2" not in sealed.SerializeToString()
    assert await codec.decode([sealed, plain]) == [plain, plain]

    swapped = Payload()
    swapped.CopyFrom(sealed)
    swapped.metadata["encryption-key-id"] = b"k2"  # the key id is bound into the tag
    tampered = Payload()
    tampered.CopyFrom(sealed)
    tampered.data = sealed.data[:-1] + bytes([sealed.data[-1] ^ 1])
    for bad in (swapped, tampered):
        with pytest.raises(PayloadDecryptionError, match="authentication failed"):
            await codec.decode([bad])

    for reader in (AesGcmCodec({"k2": keys["k2"]}, "k2"), AesGcmCodec({}, None)):
        with pytest.raises(PayloadDecryptionError, match="key id 'k1'") as raised:
            await reader.decode([sealed])
        assert not raised.value.non_retryable, "another process may hold the key: retry there"
    keyless = AesGcmCodec({}, None)
    assert await keyless.encode([plain]) == [plain]


async def test_failure_text_is_sealed_except_a_decryption_failure() -> None:
    converter = task_data_converter(new_key())
    codec_less = DataConverter()
    secret, readable = Failure(), Failure()
    await converter.encode_failure(RuntimeError("hunter2"), secret)
    await converter.encode_failure(PayloadDecryptionError("key id 'x' unknown"), readable)
    assert secret.message == "Encoded failure"
    assert b"hunter2" not in secret.SerializeToString()
    assert "hunter2" in str(await converter.decode_failure(secret))
    assert readable.message == "key id 'x' unknown"
    assert "key id 'x'" in str(await codec_less.decode_failure(readable))


def test_a_client_and_a_key_are_exclusive(temporal_client: TemporalClient) -> None:
    with pytest.raises(ValueError, match="not both"):
        TemporalTasks(client=temporal_client, encryption_key=new_key())


# -- nothing in clear in the history ----------------------------------------------------------


class Markers:
    """Unique strings for everything a task writes that must not be readable."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:12]
        self.token = f"token-{tag}"
        self.header = f"header-{tag}"
        self.argument = f"argument-{tag}"
        self.question = f"question-{tag}"
        self.answer = f"answer-{tag}"
        self.result = f"result-{tag}"
        self.failure = f"failure-{tag}"

    def all(self) -> dict[str, str]:
        return dict(vars(self))


def secret_server(markers: Markers, tasks: TemporalTasks) -> FastMCP:
    verifier = StaticTokenVerifier(tokens={markers.token: {"client_id": "alice", "sub": "u1"}})
    mcp = FastMCP("secrets", auth=verifier)
    mcp.add_extension(tasks)

    @mcp.tool(task=True)
    async def vault(dataset: str, ctx: Context) -> str:
        answer = (ctx.input_responses or {}).get("pin")
        if not isinstance(answer, mcp_types.ElicitResult) or not answer.content:
            return mcp_types.InputRequiredResult(  # type: ignore[return-value]
                input_requests={
                    "pin": mcp_types.ElicitRequest(
                        params=mcp_types.ElicitRequestFormParams(
                            message=markers.question,
                            requested_schema={
                                "type": "object",
                                "properties": {"pin": {"type": "string"}},
                            },
                        )
                    )
                }
            )
        return f"{markers.result} for {dataset} and {answer.content['pin']}"

    @mcp.tool(task=True)
    async def refuse(dataset: str) -> str:
        raise MCPError(code=-32000, message=f"{markers.failure} ({dataset})")

    return mcp


#: Makes the argument, the start and the result big enough for the payload store.
PADDING = " " + "p" * 400_000


async def run_secret_tasks(mcp: FastMCP, markers: Markers) -> list[str]:
    """A task that asks and completes, one that fails; returns their workflow ids.

    The argument is padded past the payload store's threshold, so the task's
    start, its leg inputs and its result are blobs in the store, not history.
    """
    dataset = markers.argument + PADDING

    async def answer(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return ElicitResult(action="accept", content={"pin": markers.answer})

    async with run_server_async(mcp) as url:
        transport = StreamableHttpTransport(url, headers={"X-Tenant": markers.header})
        async with Client(transport, auth=markers.token, elicitation_handler=answer) as client:
            vault = await call_tool_task(client, "vault", {"dataset": dataset})
            assert markers.result in str((await vault.result()).data)
            refuse = await call_tool_task(
                client, "refuse", {"dataset": dataset}, raise_on_error=False
            )
            failed = await refuse.wait(state="failed", timeout=60)
            assert markers.failure in (failed.status_message or "")
    return [
        workflow_id_for(task.task_id, json.dumps(["alice", None, "u1"], separators=(",", ":")))
        for task in (vault, refuse)
    ]


async def cli_history(address: str, workflow_id: str, *codec_args: str) -> str:
    """``temporal workflow show --output json``, as an operator would run it."""
    process = await asyncio.create_subprocess_exec(
        temporal_binary(),
        "workflow",
        "show",
        "--address",
        address,
        "--workflow-id",
        workflow_id,
        "--output",
        "json",
        *codec_args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 0, stderr.decode()
    return stdout.decode()


def readable_text(cli_json: str) -> str:
    """The CLI's JSON plus every base64 field decoded, so nothing hides in encoding."""
    decoded: list[str] = [cli_json]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str):
            with suppress(ValueError):  # not base64: already in the JSON text
                decoded.append(base64.b64decode(node, validate=True).decode("utf-8", "replace"))

    walk(json.loads(cli_json))
    return "\n".join(decoded)


@pytest.mark.parametrize("encrypted", [True, False], ids=["with-key", "control-no-key"])
async def test_history_and_blob_store_hold_no_plaintext_when_a_key_is_set(
    encrypted: bool,
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No marker anywhere in the stored bytes (history and payload blobs), nor in what
    the CLI shows.

    The argument is named ``dataset`` so the UI's call preview shows its value
    (it hides credential-like names): the static summary is covered too.
    """
    if not encrypted:
        # The control proves the search finds every marker when nothing encrypts, the
        # caller's token and header included: without a key they would be sealed
        # (the suite's default), so the control stores them in clear, as earlier releases.
        monkeypatch.setenv(env_var("credentials_in_clear"), "true")
    markers = Markers()
    tasks = TemporalTasks(
        address=temporal_server.address,
        task_queue=task_queue,
        encryption_key=new_key() if encrypted else None,
        data_dir=tmp_path,
    )
    workflow_ids = await run_secret_tasks(secret_server(markers, tasks), markers)

    blobs = [path for path in (tmp_path / "payloads").rglob("*") if path.is_file()]
    assert len(blobs) >= 4, "start, leg input and result of the big task are blobs"
    stored = "\n".join(path.read_bytes().decode("utf-8", "replace") for path in blobs)
    found = {name for name, marker in markers.all().items() if marker in stored}
    assert not (encrypted and found), f"in clear in the payload store: {sorted(found)}"
    if not encrypted:
        assert {"argument", "result"} <= found, "the control reads the blobs' plaintext"
    seen: set[str] = set(found)
    for workflow_id in workflow_ids:
        # A codec-less client reads the raw bytes Temporal stores; the CLI, what operators see.
        history = await temporal_client.get_workflow_handle(workflow_id).fetch_history()
        raw = History(events=history.events).SerializeToString().decode("utf-8", "replace")
        cli = readable_text(await cli_history(temporal_server.address, workflow_id))
        for text in (raw, cli):
            found = {name for name, marker in markers.all().items() if marker in text}
            assert not (encrypted and found), f"{workflow_id}: in clear: {sorted(found)}"
            seen |= found
    if not encrypted:
        assert seen == set(markers.all()), "the control must find everything encryption hides"


# -- rotation ---------------------------------------------------------------------------------


async def test_a_task_created_under_an_old_key_completes_after_rotation(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str
) -> None:
    """Created under ``k1``; a fleet with ``k2`` active and ``k1`` kept finishes it."""
    k1, k2 = new_key(), new_key()
    old = FastMCP("old")
    old.add_extension(
        TemporalTasks(
            address=temporal_server.address,
            task_queue=task_queue,
            encryption_key=f"k1:{k1}",
            run_worker=False,
        )
    )
    new = FastMCP("new")
    new.add_extension(
        TemporalTasks(
            address=temporal_server.address,
            task_queue=task_queue,
            encryption_key=f"k2:{k2},k1:{k1}",  # k2 encrypts, k1 still decrypts
        )
    )
    for server in (old, new):

        @server.tool(task=True)
        async def echo(text: str) -> str:
            return f"echo {text}"

    async with Client(old) as before:
        task = await call_tool_task(before, "echo", {"text": "rotated"})
    async with Client(new) as after:
        handle = ToolTask(after, "echo", task.create_result)
        assert (await handle.result()).data == "echo rotated"

    history = await temporal_client.get_workflow_handle(
        workflow_id_for(task.task_id, None)
    ).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    completed = history.events[-1].workflow_execution_completed_event_attributes
    assert started.input.payloads[0].metadata["encryption-key-id"] == b"k1"
    assert completed.result.payloads[0].metadata["encryption-key-id"] == b"k2"


# -- fail closed ------------------------------------------------------------------------------


#: The TTL of the unreadable tasks: a task nobody can read fails when it ends. Before
#: then a worker must have given the work back and a poll must have seen why the task
#: waits, each a few Temporal calls that take seconds on a loaded machine; a pass waits
#: the whole TTL.
TTL_MS = 10_000


@asynccontextmanager
async def front_and_worker(
    address: str, task_queue: str, *, creator_key: str, worker_key: str | None, legs_only: bool
) -> AsyncIterator[tuple[Client, Client, list[str]]]:
    """A front end that creates tasks under ``creator_key``, and a process with ``worker_key``.

    ``legs_only``: the creator runs the task workflows and sends legs to the
    other process's queue, so only a leg's input is unreadable there.
    """
    ran: list[str] = []
    worker_queue = f"{task_queue}-legs" if legs_only else task_queue
    creator = FastMCP("creator")
    creator.add_extension(
        TemporalTasks(
            address=address,
            task_queue=task_queue,
            encryption_key=creator_key,
            run_worker=legs_only,
            leg_policy=LegPolicy(task_queue=worker_queue),
            ttl_ms=TTL_MS,
        )
    )
    other = FastMCP("other")
    other.add_extension(
        TemporalTasks(address=address, task_queue=worker_queue, encryption_key=worker_key)
    )
    for server in (creator, other):

        @server.tool(task=True)
        async def echo(text: str) -> str:
            ran.append(text)
            return text

    async with Client(creator) as creating, Client(other) as reading:
        yield creating, reading, ran


_CANNOT_DECRYPT = "Cannot decrypt a task payload: it was encrypted with key id 'a', and"


@pytest.mark.parametrize(
    ("worker_key", "legs_only", "expected"),
    [
        (
            "b",
            False,
            "Task expired: no worker could read it within its TTL. "
            f"{_CANNOT_DECRYPT} this process holds 'b'",
        ),
        (
            None,
            False,
            "Task expired: no worker could read it within its TTL. "
            f"{_CANNOT_DECRYPT} this process holds none",
        ),
        (
            "b",
            True,
            f"Task expired: its tool leg did not finish within the task's TTL ({TTL_MS} ms); "
            f"last failure: {_CANNOT_DECRYPT} this process holds 'b'",
        ),
    ],
    ids=["workflow-input-wrong-key", "workflow-input-no-key", "leg-input-wrong-key"],
)
async def test_a_task_nobody_can_read_waits_for_its_ttl_then_fails_naming_the_key(
    worker_key: str | None,
    legs_only: bool,
    expected: str,
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Never failed by a worker that lacks the key, never run without its payloads.

    A worker that cannot decrypt gives the work back (another one may hold the
    key): the task stays ``working`` until its TTL ends with nobody able to read
    it, then fails with ``-32000`` naming the key id. Both front ends -- the one
    holding the creating key and the one that does not -- report that failure.
    Meanwhile ``tasks/get`` says why it waits: a failing workflow task, or a
    leg's failing attempts, with the decoded reason (never the placeholder
    "Encoded failure").
    """
    # A workflow no worker can read ends by its execution timeout (TTL + grace).
    monkeypatch.setattr(starter, "EXPIRY_GRACE", timedelta(seconds=1))
    keys = {"a": f"a:{new_key()}", "b": f"b:{new_key()}"}
    async with front_and_worker(
        temporal_server.address,
        task_queue,
        creator_key=keys["a"],
        worker_key=keys[worker_key] if worker_key else None,
        legs_only=legs_only,
    ) as (creating, reading, ran):
        task = await call_tool_task(creating, "echo", {"text": "secret"}, raise_on_error=False)
        handle = temporal_client.get_workflow_handle(workflow_id_for(task.task_id, None))
        seen: list[str] = []
        for _ in range(300):
            polled = await task.status()
            if polled.status != "working":
                break
            seen.append(polled.status_message or "")
            await asyncio.sleep(0.1)
        status = await task.status()
        assert status.status == "failed", seen[-3:]
        assert status.status_message == expected
        assert status.error == {"code": -32000, "message": expected}
        history = await handle.fetch_history()
        given_back = [
            event
            for event in history.events
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        ]
        assert bool(given_back) != legs_only, "the workflow task was given back, not failed"
        other_view = await ToolTask(reading, "echo", task.create_result).status()
        assert other_view.status == "failed"
        assert "Cannot decrypt a task payload" in (other_view.status_message or "")
    assert ran == [], "the tool body must not run without its payloads"
    failing = (
        "The task's workflow fails its workflow task (attempt "
        if not legs_only
        else "Tool leg 'echo' fails (attempt "
    )
    said = [message for message in seen if message.startswith(failing)]
    assert said, seen
    assert all("Cannot decrypt a task payload" in message for message in said), said
    assert not any("Encoded failure" in message for message in seen), seen
