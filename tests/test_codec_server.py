"""The codec server, over real HTTP: what the Temporal Web UI and CLI call.

A real uvicorn on a free 127.0.0.1 port: CORS preflight for the UI's origin,
``/decode`` and ``/encode`` round trips (also under ``/{namespace}/``), the
bearer token, and ``temporal workflow show --codec-endpoint`` against it.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from fastmcp import Client, FastMCP
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.cli.codec_server import create_app
from fastmcp_temporal.server.core.codec import KEY_ENV, AesGcmCodec
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from tests.ports import free_port
from tests.test_encryption import cli_history, readable_text

KEY = f"k1:{base64.b64encode(os.urandom(32)).decode()}"
UI = "http://127.0.0.1:8233"


@asynccontextmanager
async def codec_server(**options: Any) -> AsyncIterator[str]:
    """``create_app`` under uvicorn on 127.0.0.1; yields its base URL."""
    port = free_port()
    config = uvicorn.Config(
        create_app(AesGcmCodec.from_spec(KEY), **options),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not serving.done(), "uvicorn exited"
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await serving


def payload_json(text: str) -> dict[str, Any]:
    payload = Payload(metadata={"encoding": b"json/plain"}, data=text.encode())
    return json_format.MessageToDict(payload)


async def test_preflight_allows_the_ui_origin_only() -> None:
    async with codec_server(allow_origins=[UI]) as url, httpx.AsyncClient() as http:
        preflight = {
            "Origin": UI,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, x-namespace, authorization",
        }
        allowed = await http.options(f"{url}/default/decode", headers=preflight)
        stranger = await http.options(
            f"{url}/decode", headers={**preflight, "Origin": "http://evil.example"}
        )
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == UI
    assert "POST" in allowed.headers["access-control-allow-methods"]
    allowed_headers = allowed.headers["access-control-allow-headers"].lower()
    assert {"content-type", "x-namespace", "authorization"} <= {
        header.strip() for header in allowed_headers.split(",")
    }
    assert allowed.headers["access-control-allow-credentials"] == "true"
    assert "access-control-allow-origin" not in stranger.headers


@pytest.mark.parametrize("prefix", ["", "/default"])
async def test_encode_then_decode_round_trips(prefix: str) -> None:
    body = {"payloads": [payload_json('{"secret": "hunter2"}'), payload_json('"plain"')]}
    async with codec_server() as url, httpx.AsyncClient() as http:
        encoded = await http.post(f"{url}{prefix}/encode", json=body, headers={"Origin": UI})
        assert encoded.status_code == 200
        assert encoded.headers["access-control-allow-origin"] == UI
        sealed = encoded.json()["payloads"]
        assert len(sealed) == 2
        assert all("hunter2" not in str(p) for p in sealed)
        assert base64.b64decode(sealed[0]["metadata"]["encoding"]) == b"binary/encrypted"
        decoded = await http.post(f"{url}{prefix}/decode", json={"payloads": sealed})
        unreadable = {
            "metadata": sealed[0]["metadata"],
            "data": base64.b64encode(b"x" * 40).decode(),
        }
        mixed = await http.post(f"{url}{prefix}/decode", json={"payloads": [unreadable, *sealed]})
        bad = await http.post(f"{url}{prefix}/decode", content=b"not json")
    assert decoded.json() == body
    # One payload this key cannot open is shown as stored; the rest still decode.
    assert mixed.json()["payloads"] == [unreadable, *body["payloads"]]
    assert bad.status_code == 400


async def test_the_bearer_token_is_enforced() -> None:
    body = {"payloads": [payload_json('"x"')]}
    async with codec_server(token="s3cret") as url, httpx.AsyncClient() as http:
        missing = await http.post(f"{url}/encode", json=body)
        wrong = await http.post(f"{url}/encode", json=body, headers={"Authorization": "Bearer no"})
        right = await http.post(
            f"{url}/encode", json=body, headers={"Authorization": "Bearer s3cret"}
        )
    assert (missing.status_code, wrong.status_code, right.status_code) == (401, 401, 200)


async def test_the_temporal_cli_decodes_through_it(
    temporal_server: DevServer, task_queue: str
) -> None:
    """``temporal workflow show --codec-endpoint``: plaintext with it, ciphertext without."""
    mcp = FastMCP("cli")
    mcp.add_extension(
        TemporalTasks(address=temporal_server.address, task_queue=task_queue, encryption_key=KEY)
    )

    @mcp.tool(task=True)
    async def echo(text: str) -> str:
        return f"echo {text}"

    async with Client(mcp) as client:
        task = await call_tool_task(client, "echo", {"text": "hunter2"})
        assert (await task.result()).data == "echo hunter2"
    workflow_id = workflow_id_for(task.task_id, None)

    async with codec_server(token="s3cret") as url:
        decoded = await cli_history(
            temporal_server.address,
            workflow_id,
            "--codec-endpoint",
            url,
            "--codec-auth",
            "Bearer s3cret",
        )
    stored = await cli_history(temporal_server.address, workflow_id)
    assert "echo hunter2" in readable_text(decoded)
    assert "hunter2" not in readable_text(stored)


async def test_a_big_payload_shows_as_its_store_reference(
    temporal_server: DevServer, task_queue: str, tmp_path: Any
) -> None:
    """Payloads in the payload store are references in the history: the codec server
    passes them through (the UI shows which blob holds them), their blobs stay sealed."""
    mcp = FastMCP("cli-big")
    mcp.add_extension(
        TemporalTasks(
            address=temporal_server.address,
            task_queue=task_queue,
            encryption_key=KEY,
            data_dir=tmp_path,
        )
    )

    @mcp.tool(task=True)
    async def echo(text: str) -> str:
        return f"echo {text}"

    big = "hunter2 " + "z" * 400_000
    async with Client(mcp) as client:
        task = await call_tool_task(client, "echo", {"text": big})
        assert (await task.result()).data == f"echo {big}"
    workflow_id = workflow_id_for(task.task_id, None)

    async with codec_server() as url:
        decoded = readable_text(
            await cli_history(temporal_server.address, workflow_id, "--codec-endpoint", url)
        )
    assert "fastmcp-temporal.disk" in decoded, "the reference names its store"
    # Only the call preview of the workflow's summary (decrypted) shows the text's start.
    assert "z" * 1000 not in decoded, "the big payloads are in the store, not the history"
    blobs = list((tmp_path / "payloads").rglob("*"))
    assert blobs and not any(b"hunter2" in p.read_bytes() for p in blobs if p.is_file())


async def test_a_dev_server_ui_points_at_the_codec_endpoint(tmp_path: Any) -> None:
    """The encryption guide's wiring: ``--ui-codec-endpoint`` reaches the UI's settings."""
    endpoint = "http://127.0.0.1:8081"
    dev = await DevServer.start(
        data_dir=tmp_path, in_memory=True, extra_args=["--ui-codec-endpoint", endpoint]
    )
    try:
        assert dev.ui_url is not None
        async with httpx.AsyncClient() as http:
            settings = (await http.get(f"{dev.ui_url}/api/v1/settings")).json()
    finally:
        dev.stop()
    assert settings["Codec"]["Endpoint"] == endpoint


async def test_the_command_serves_with_the_key_from_the_environment() -> None:
    """``fastmcp-temporal codec-server`` as operators start it: a real process."""
    port = free_port()
    command = [sys.executable, "-m", "fastmcp_temporal.server.cli", "codec-server"]
    process = await asyncio.create_subprocess_exec(
        *command,
        "--port",
        str(port),
        env={**os.environ, KEY_ENV: KEY},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    body = {"payloads": [payload_json('"x"')]}
    try:
        async with httpx.AsyncClient() as http:
            for _ in range(600):  # Python + fastmcp start in ~9 s on a busy machine
                try:
                    encoded = await http.post(f"http://127.0.0.1:{port}/encode", json=body)
                    break
                except httpx.ConnectError:
                    await asyncio.sleep(0.1)
            else:
                pytest.fail("the codec server never listened")
        keyless = await asyncio.create_subprocess_exec(
            *command,
            env={k: v for k, v in os.environ.items() if k != KEY_ENV},
            stderr=asyncio.subprocess.PIPE,
        )
        _, refusal = await keyless.communicate()
    finally:
        process.terminate()
        await process.wait()
    sealed = json_format.ParseDict(encoded.json()["payloads"][0], Payload())
    assert sealed.metadata["encryption-key-id"] == b"k1"
    assert keyless.returncode != 0
    assert b"no key" in refusal
