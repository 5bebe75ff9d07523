"""No credential in clear in Temporal: the caller's token and headers, in any configuration.

A task restores its creating caller in every leg, so the caller's token and
headers are part of its inputs. The proofs read what Temporal stores the way
anyone with the files can -- the embedded server's raw SQLite database -- and
search it for a unique token and API key; the same run with
``FASTMCP_TEMPORAL_CREDENTIALS_IN_CLEAR`` (the earlier releases' behaviour) is
the control that the search finds them. Each run also checks that the tool
body still sees both (``get_access_token()``, ``get_http_headers()``).
"""

from __future__ import annotations

import base64
import json
import os
import stat
import uuid
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.dependencies import get_http_headers
from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import History
from temporalio.client import Client as TemporalClient

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.cli.worker import READY_LINE
from fastmcp_temporal.server.core import credentials
from fastmcp_temporal.server.core.codec import PayloadDecryptionError
from fastmcp_temporal.server.core.credentials import CredentialPolicy, embedded_seal
from fastmcp_temporal.server.core.settings import env_var
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from fastmcp_temporal.workflows.models import CallerSnapshot
from tests.conftest import http_client
from tests.ports import run_server_async
from tests.processes.creds_server import TASK_QUEUE, build
from tests.processes.running import BIN, Process
from tests.test_workflow_tools import greeter_server

IN_CLEAR = credentials.IN_CLEAR_ENV


class Secrets:
    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:12]
        self.token = f"token-{tag}"
        self.api_key = f"apikey-{tag}"


@pytest.fixture(autouse=True)
def _the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's conftest seals by address under the session's key; these tests check
    what a server does with nothing configured (refusing, dropping headers)."""
    monkeypatch.delenv(IN_CLEAR, raising=False)
    monkeypatch.delenv(env_var("encryption_key"), raising=False)
    monkeypatch.delenv(env_var("credentials_key_dir"), raising=False)


async def call_whoami(mcp: FastMCP, secrets: Secrets) -> tuple[dict[str, Any], str]:
    """One task over streamable HTTP, with a bearer token and an API key header."""
    async with run_server_async(mcp) as url:
        transport = StreamableHttpTransport(
            url, headers={"X-Api-Key": secrets.api_key, "X-Tenant": "acme"}
        )
        async with Client(transport, auth=secrets.token) as client:
            task = await call_tool_task(client, "whoami", {})
            result = await task.result()
    assert isinstance(result.structured_content, dict)
    return result.structured_content, task.task_id


def stored_bytes(data_dir: Path) -> bytes:
    """Every file of the data directory: the SQLite database and its WAL, blobs, keys."""
    return b"".join(path.read_bytes() for path in sorted(data_dir.rglob("*")) if path.is_file())


#: The task scope of the ``whoami`` caller (client ``app``, subject ``ada``).
ADA = json.dumps(["app", None, "ada"], separators=(",", ":"))


async def raw_history(temporal_client: TemporalClient, task_id: str, scope: str | None) -> bytes:
    """The task's history as the server stores it: every event, serialized."""
    handle = temporal_client.get_workflow_handle(workflow_id_for(task_id, scope))
    history = await handle.fetch_history()
    return History(events=history.events).SerializeToString()


def creds_worker(data_dir: str | Path, secrets: Secrets, log: Path, *options: str) -> Process:
    """``fastmcp-temporal worker`` of ``creds_server.py`` on ``data_dir``, with no key setting
    of its own: it finds the key in the folder, as a separate worker process does."""
    return Process(
        "worker",
        [
            str(BIN / "fastmcp-temporal"),
            "worker",
            "tests/processes/creds_server.py",
            "--data-dir",
            str(data_dir),
            *options,
        ],
        {"CREDS_TOKEN": secrets.token, "CREDS_API_KEY": secrets.api_key},
        log,
    )


@pytest.mark.parametrize("sealed", [True, False], ids=["default", "control-in-clear"])
async def test_the_embedded_default_stores_no_token_and_the_tool_still_sees_it(
    sealed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not sealed:
        monkeypatch.setenv(IN_CLEAR, "true")
    secrets = Secrets()
    data_dir = tmp_path / "embedded"
    mcp = build(
        TemporalTasks(data_dir=data_dir, task_queue=TASK_QUEUE, ui=False),
        token=secrets.token,
        api_key=secrets.api_key,
    )
    seen, _ = await call_whoami(mcp, secrets)
    assert seen["token_ok"] and seen["api_key_ok"], seen
    assert seen["client_id"] == "app" and seen["tenant"] == "acme"

    database = data_dir / "temporal.sqlite"
    assert database.is_file()
    stored = stored_bytes(data_dir)
    counts = {name: stored.count(value.encode()) for name, value in vars(secrets).items()}
    if sealed:
        assert counts == {"token": 0, "api_key": 0}
        key_file = data_dir / credentials.KEY_FILE_NAME
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    else:
        assert counts["token"] >= 1 and counts["api_key"] >= 1, counts


async def test_a_worker_process_of_the_data_directory_opens_what_the_front_end_sealed(
    tmp_path: Path,
) -> None:
    """A stateless front end seals; ``fastmcp-temporal worker --data-dir`` (another
    process, the same generated key file) runs the leg with the caller restored."""
    secrets = Secrets()
    data_dir = tmp_path / "embedded"
    front = build(
        TemporalTasks(data_dir=data_dir, task_queue=TASK_QUEUE, ui=False, run_worker=False),
        token=secrets.token,
        api_key=secrets.api_key,
    )
    async with Client(front):  # starts the embedded server the worker joins
        worker = creds_worker(data_dir, secrets, tmp_path / "worker.log")
        try:
            await worker.wait_for_output(READY_LINE)
            seen, _ = await call_whoami(front, secrets)
        finally:
            worker.stop()
    assert seen["token_ok"] and seen["api_key_ok"], seen
    assert seen["worker_pid"] == worker.pid
    assert secrets.token.encode() not in stored_bytes(data_dir)


async def test_the_plugins_temporal_tasks_seals_like_the_embedded_default_for_its_workers(
    temporal_tasks: Any,
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """``temporal_tasks`` (a client of the session's Temporal) on an authenticated server
    starts, sealing under the session data directory's key: a ``fastmcp-temporal worker
    --data-dir`` of that directory (no key setting of its own) runs the leg with the
    caller restored, and the history holds neither the token nor the API key."""
    secrets = Secrets()
    front = build(temporal_tasks(run_worker=False), token=secrets.token, api_key=secrets.api_key)
    worker = creds_worker(
        temporal_server.data_dir, secrets, tmp_path / "worker.log", "--task-queue", task_queue
    )
    try:
        await worker.wait_for_output(READY_LINE)
        seen, task_id = await call_whoami(front, secrets)
    finally:
        worker.stop()
    assert seen["token_ok"] and seen["api_key_ok"], seen
    assert seen["worker_pid"] == worker.pid
    assert (Path(temporal_server.data_dir) / credentials.KEY_FILE_NAME).is_file()
    raw = await raw_history(temporal_client, task_id, ADA)
    assert secrets.token.encode() not in raw and secrets.api_key.encode() not in raw


async def test_a_workflow_tool_knows_its_caller_without_the_sealed_token(
    tmp_path: Path,
) -> None:
    """``caller()`` in a workflow tool reads client id, subject and scopes in clear."""
    verifier = StaticTokenVerifier(tokens={"t": {"client_id": "app", "sub": "ada", "scopes": []}})
    server = greeter_server(
        TemporalTasks(data_dir=tmp_path / "embedded", task_queue="greeter", ui=False),
        auth=verifier,
    )
    (tmp_path / "release").write_text("")

    async def answer(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return {"name": "Ada"}

    async with http_client(server, auth="t", elicitation_handler=answer) as client:
        task = await call_tool_task(client, "greeter_agent", {"marker_dir": str(tmp_path)})
        result = await task.result()
    assert result.structured_content is not None
    assert result.structured_content["asked_by"] == "ada"


async def test_with_a_key_the_token_round_trips_encrypted_with_everything(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str
) -> None:
    """A cluster with a key: the token reaches the tool; the raw history holds neither it
    nor the API key (the codec encrypts the whole input, so nothing is sealed twice)."""
    secrets = Secrets()
    key = base64.b64encode(os.urandom(32)).decode()
    mcp = build(
        TemporalTasks(address=temporal_server.address, task_queue=task_queue, encryption_key=key),
        token=secrets.token,
        api_key=secrets.api_key,
    )
    seen, task_id = await call_whoami(mcp, secrets)
    assert seen["token_ok"] and seen["api_key_ok"], seen
    raw = await raw_history(temporal_client, task_id, ADA)
    assert secrets.token.encode() not in raw and secrets.api_key.encode() not in raw


async def test_an_authenticated_server_on_a_temporal_address_without_a_key_refuses_to_start(
    temporal_server: DevServer, task_queue: str
) -> None:
    mcp = build(
        TemporalTasks(address=temporal_server.address, task_queue=task_queue),
        token="t",
        api_key="k",
    )
    with pytest.raises(Exception) as raised:
        async with Client(mcp):
            pass
    messages = [str(error) for error in _chain(raised.value)]
    expected = next(m for m in messages if "access tokens would be stored in clear" in m)
    assert "\n" not in expected
    assert "FASTMCP_TEMPORAL_ENCRYPTION_KEY" in expected and "os.urandom(32)" in expected


async def test_by_address_the_credentials_key_dir_setting_seals_instead_of_refusing(
    temporal_server: DevServer,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``FASTMCP_TEMPORAL_CREDENTIALS_KEY_DIR``, read when the server starts (set here
    after ``TemporalTasks(...)``, as a launcher may): the same server as above starts,
    its key file is made in that directory, and the history holds no credential."""
    secrets = Secrets()
    mcp = build(
        TemporalTasks(address=temporal_server.address, task_queue=task_queue),
        token=secrets.token,
        api_key=secrets.api_key,
    )
    monkeypatch.setenv(env_var("credentials_key_dir"), str(tmp_path / "keys"))
    seen, task_id = await call_whoami(mcp, secrets)
    assert seen["token_ok"] and seen["api_key_ok"], seen
    key_file = tmp_path / "keys" / credentials.KEY_FILE_NAME
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    raw = await raw_history(temporal_client, task_id, ADA)
    assert secrets.token.encode() not in raw and secrets.api_key.encode() not in raw


def _chain(error: BaseException) -> list[BaseException]:
    """The error, its causes and, for a group, its members."""
    found: list[BaseException] = []
    pending = [error]
    while pending:
        current = pending.pop()
        if any(current is seen for seen in found):
            continue
        found.append(current)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
    return found


async def test_an_unauthenticated_server_without_a_key_drops_credential_headers_only(
    temporal_server: DevServer, temporal_client: TemporalClient, task_queue: str
) -> None:
    """Nothing to protect them with: ``X-Api-Key`` stays out of history, ``X-Tenant`` in."""
    secrets = Secrets()
    mcp = FastMCP("open")
    mcp.add_extension(TemporalTasks(address=temporal_server.address, task_queue=task_queue))

    @mcp.tool(task=True)
    async def whoami() -> dict[str, Any]:
        headers = get_http_headers(include_all=True)
        return {"api_key_ok": "x-api-key" in headers, "tenant": headers.get("x-tenant")}

    async with run_server_async(mcp) as url:
        transport = StreamableHttpTransport(
            url, headers={"X-Api-Key": secrets.api_key, "X-Tenant": "acme"}
        )
        async with Client(transport) as client:
            task = await call_tool_task(client, "whoami", {})
            result = await task.result()
    assert result.structured_content == {"api_key_ok": False, "tenant": "acme"}
    raw = await raw_history(temporal_client, task.task_id, None)
    assert secrets.api_key.encode() not in raw and b"acme" in raw


async def test_a_sealed_caller_opens_only_with_its_key_and_an_old_clear_one_as_it_is(
    tmp_path: Path,
) -> None:
    """Replay side: tasks in flight carry the clear fields and are read as they are."""
    caller = CallerSnapshot(
        access_token_json=json.dumps({"token": "secret-token"}), http_headers={"x-a": "b"}
    )
    mine = CredentialPolicy(seal=embedded_seal(tmp_path / "one"))
    sealed = await mine.protect(caller)
    assert sealed.access_token_json is None and sealed.http_headers is None
    assert "secret-token" not in sealed.model_dump_json()
    reread = CredentialPolicy(seal=embedded_seal(tmp_path / "one"))  # the next process
    assert await reread.restore(sealed) == caller
    assert await CredentialPolicy().restore(caller) == caller  # recorded before sealing
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'{"access_token_json": "x"}')
    forged = sealed.model_copy(
        update={"sealed_credentials": base64.b64encode(plain.SerializeToString()).decode()}
    )
    with pytest.raises(PayloadDecryptionError, match="not encrypted"):
        await mine.restore(forged)
    for stranger in (CredentialPolicy(seal=embedded_seal(tmp_path / "two")), CredentialPolicy()):
        with pytest.raises(PayloadDecryptionError) as raised:
            await stranger.restore(sealed)
        assert not raised.value.non_retryable, "a worker with the key may take the leg"
