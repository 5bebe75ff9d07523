"""An operator finds and understands a task in the Temporal Web UI, without our code.

Everything is read the way the UI reads it: through the UI server's HTTP API
(``/api/v1/...``, the routes its pages call) on the dev server the extension
embeds, and once in a real headless Chromium that renders the task's page.
Search attributes are plaintext by Temporal's design: they carry the tool name
and the status only, which is checked here too.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client, Context, FastMCP

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.client import ToolTask, call_tool_task, update_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for
from tests.helpers import declares_elicitation
from tests.processes.browser import chromium_binary, open_page
from tests.test_lifecycle import ask

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
NAMESPACE = "/api/v1/namespaces/default"
ACCEPT = {"action": "accept", "content": {"answer": "y"}}


def payload(value: dict[str, Any]) -> Any:
    """A payload as the UI API returns it (base64 JSON)."""
    return json.loads(base64.b64decode(value["data"]))


def approval_server(extension: TemporalTasks) -> FastMCP:
    mcp = FastMCP("ui")
    mcp.add_extension(extension)

    @mcp.tool(task=True)
    async def purge_bucket(bucket: str, api_token: str, ctx: Context) -> str:
        if not ctx.input_responses:
            return ask("confirm", f"Really purge {bucket}?")
        return f"purged {bucket}"

    return mcp


async def until_status(task: ToolTask, status: str) -> None:
    """Polls as the client helper does (asking again while Temporal is busy)."""
    assert (await task.wait(state=status, timeout=30)).status == status


async def visible(http: httpx.AsyncClient, query: str, workflow_id: str) -> dict[str, Any]:
    """The UI's list route finds ``workflow_id`` (visibility is eventually consistent,
    and later on a loaded machine)."""
    deadline = asyncio.get_running_loop().time() + 60
    while asyncio.get_running_loop().time() < deadline:
        response = await http.get(f"{NAMESPACE}/workflows", params={"query": query})
        assert response.status_code == 200, response.text
        for execution in response.json().get("executions") or []:
            if execution["execution"]["workflowId"] == workflow_id:
                return execution
        await asyncio.sleep(0.1)
    raise AssertionError(f"{query!r} never listed {workflow_id}")


async def current_details(http: httpx.AsyncClient, workflow_id: str) -> str:
    """What the UI shows as *current details* (its metadata query, with its CSRF token)."""
    if "_csrf" not in http.cookies:
        await http.get("/")
    response = await http.post(
        f"{NAMESPACE}/workflows/{workflow_id}/query/__temporal_workflow_metadata",
        json={"query": {}},
        headers={"X-CSRF-TOKEN": http.cookies.get("_csrf") or ""},
    )
    assert response.status_code == 200, response.text
    (metadata,) = response.json()["queryResult"]["payloads"]
    return str(payload(metadata).get("currentDetails", ""))


async def test_an_operator_finds_and_reads_a_task_through_the_ui_api(
    temporal_server: DevServer, temporal_tasks: Callable[..., TemporalTasks]
) -> None:
    assert temporal_server.ui_url is not None
    mcp = approval_server(temporal_tasks())
    async with (
        Client(mcp, elicitation_handler=declares_elicitation) as client,
        httpx.AsyncClient(base_url=temporal_server.ui_url, timeout=10) as http,
    ):
        task = await call_tool_task(
            client, "purge_bucket", {"bucket": "logs-2026", "api_token": "hunter2"}
        )
        await until_status(task, "input_required")
        workflow_id = workflow_id_for(task.task_id, None)
        assert task.task_id in workflow_id

        listed = await visible(
            http, "McpToolName = 'purge_bucket' AND McpTaskStatus = 'input_required'", workflow_id
        )
        assert listed["type"]["name"] == "McpTask:purge_bucket"
        fields = listed["searchAttributes"]["indexedFields"]
        assert payload(fields["McpToolName"]) == "purge_bucket"
        assert "hunter2" not in json.dumps({k: payload(v) for k, v in fields.items()})

        described = (await http.get(f"{NAMESPACE}/workflows/{workflow_id}")).json()
        metadata = described["executionConfig"]["userMetadata"]
        summary, details = payload(metadata["summary"]), payload(metadata["details"])
        assert summary == 'MCP task · purge_bucket(bucket="logs-2026", api_token=•••)'
        assert task.task_id in details and "purge_bucket" in details
        assert "hunter2" not in summary + details
        assert await current_details(http, workflow_id) == (
            "Waiting for the client's answer to:\n\n* elicitation/create: Really purge logs-2026?"
        )

        (key,) = (await task.status()).input_requests or {}
        await update_task(client.session, task.task_id, {key: ACCEPT})
        await task.wait(timeout=30)
        await visible(
            http, "McpToolName = 'purge_bucket' AND McpTaskStatus = 'completed'", workflow_id
        )
        assert await current_details(http, workflow_id) == "Completed"
        history = (await http.get(f"{NAMESPACE}/workflows/{workflow_id}/history")).json()
        scheduled = [
            event
            for event in history["history"]["events"]
            if event["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
        ]
        assert [
            e["activityTaskScheduledEventAttributes"]["activityType"]["name"] for e in scheduled
        ] == [
            "purge_bucket",
            "purge_bucket",
        ]
        assert [payload(e["userMetadata"]["summary"]) for e in scheduled] == [
            "purge_bucket · leg 1",
            "purge_bucket · leg 2",
        ]


async def test_failed_and_cancelled_tasks_are_findable_by_status(
    temporal_server: DevServer, temporal_tasks: Callable[..., TemporalTasks]
) -> None:
    mcp = FastMCP("ends")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def refuse() -> str:
        from mcp.shared.exceptions import MCPError

        raise MCPError(code=-32602, message="no such dataset")

    @mcp.tool(task=True)
    async def wait_forever() -> str:
        await asyncio.sleep(3600)
        return "never"

    async with (
        Client(mcp) as client,
        httpx.AsyncClient(base_url=str(temporal_server.ui_url), timeout=10) as http,
    ):
        failed = await call_tool_task(client, "refuse", {})
        cancelled = await call_tool_task(client, "wait_forever", {})
        await until_status(failed, "failed")
        await cancelled.cancel()
        await until_status(cancelled, "cancelled")
        for task, status in ((failed, "failed"), (cancelled, "cancelled")):
            workflow_id = workflow_id_for(task.task_id, None)
            await visible(http, f"McpTaskStatus = '{status}'", workflow_id)
        assert (await current_details(http, workflow_id_for(failed.task_id, None))).startswith(
            "Failed: no such dataset"
        )


async def test_a_namespace_without_the_search_attributes_still_runs_tasks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Degrade, log once: tasks start without the attributes (and never upsert them)."""
    bare = await DevServer.start(
        data_dir=tmp_path, in_memory=True, ui=False, search_attributes=False
    )
    try:
        mcp = approval_server(TemporalTasks(address=bare.address, task_queue="bare"))
        caplog.set_level(logging.WARNING, logger="fastmcp_temporal.server.tasks.starter")
        async with Client(mcp, elicitation_handler=declares_elicitation) as client:
            for _ in range(2):
                task = await call_tool_task(
                    client, "purge_bucket", {"bucket": "b", "api_token": "t"}
                )
                await until_status(task, "input_required")
                (key,) = (await task.status()).input_requests or {}
                await update_task(client.session, task.task_id, {key: ACCEPT})
                assert (await task.wait(timeout=30)).status == "completed"
        warnings = [r for r in caplog.records if "search attributes" in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
    finally:
        bare.stop()


@pytest.mark.skipif(
    chromium_binary() is None,
    reason="chromium is not installed (Debian: apt-get install -y chromium; .ci/run does it)",
)
async def test_the_task_page_renders_tool_and_status_in_chromium(
    temporal_server: DevServer, temporal_tasks: Callable[..., TemporalTasks], tmp_path: Path
) -> None:
    mcp = approval_server(temporal_tasks())
    async with Client(mcp, elicitation_handler=declares_elicitation) as client:
        task = await call_tool_task(client, "purge_bucket", {"bucket": "ui", "api_token": "t"})
        await until_status(task, "input_required")
        workflow_id = workflow_id_for(task.task_id, None)
        url = f"{temporal_server.ui_url}/namespaces/default/workflows/{workflow_id}"
        async with open_page(url, tmp_path / "chromium") as page:
            await page.wait_for_text("McpTask:purge_bucket", "RUNNING", workflow_id, timeout=60)
            await page.click("User Metadata")
            await page.wait_for_text("purge_bucket(bucket=", "Really purge ui?", timeout=30)
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(ARTIFACTS / "task-page.png")
        await task.cancel()
