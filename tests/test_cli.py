"""The ``fastmcp-temporal`` command, run as a real process: finding Temporal, failing cleanly.

Without an address every subcommand joins the embedded Temporal of the data
directory (never starting one); whatever goes wrong -- no address, nothing
listening, a bad key, a closed pipe, an unknown task -- is one line on stderr
and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from fastmcp import Client, FastMCP
from temporalio.client import Client as TemporalClient
from temporalio.worker import Worker

from fastmcp_temporal import TemporalTasks, workflow_tool
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.cli.main import one_line
from fastmcp_temporal.server.embedded import shared
from fastmcp_temporal.server.embedded.shared import EmbeddedServer
from fastmcp_temporal.server.temporal.sandbox_errors import (
    WorkflowSandboxError,
    causes,
    explain,
)
from fastmcp_temporal.testing import shared_temporal
from tests import forks
from tests.processes.running import BIN, ROOT, Process

WORKER_SERVER = str(ROOT / "examples" / "demo_server.py")


def run(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_")}
    environment.pop("FASTMCP_TEMPORAL_DATA_DIR", None)
    return forks.run(
        [str(BIN / "fastmcp-temporal"), *args],
        cwd=cwd,
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_one_line_failure(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode != 0, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and expected in lines[0], lines[0]


@pytest.mark.parametrize(
    "command", [["tasks", "list"], ["tasks", "show", "x"], ["worker", WORKER_SERVER]]
)
async def test_no_address_and_no_embedded_server_is_one_line(
    command: list[str], tmp_path: Path
) -> None:
    result = await asyncio.to_thread(run, *command, cwd=tmp_path)
    assert_one_line_failure(result, "No Temporal address and no embedded Temporal running")
    assert not (tmp_path / ".fastmcp-temporal").exists(), "nothing was started or created"


@pytest.mark.parametrize("command", [["tasks", "list"], ["tasks", "cancel", "x"]])
async def test_an_unreachable_address_is_one_line(command: list[str], tmp_path: Path) -> None:
    result = await asyncio.to_thread(run, *command, "--address", "127.0.0.1:1", cwd=tmp_path)
    assert_one_line_failure(result, "Cannot reach Temporal at 127.0.0.1:1")


async def test_a_bad_or_missing_key_is_one_line(tmp_path: Path) -> None:
    bad = await asyncio.to_thread(
        run, "tasks", "list", cwd=tmp_path, FASTMCP_TEMPORAL_ENCRYPTION_KEY="not-a-key"
    )
    assert_one_line_failure(bad, "Encryption key 'default'")
    missing = await asyncio.to_thread(run, "codec-server", cwd=tmp_path)
    assert_one_line_failure(missing, "no key")


async def test_tasks_joins_the_embedded_server_of_the_data_dir(tmp_path: Path) -> None:
    """Found by the folder alone: an unknown task and a closed pipe fail in one line."""
    async with shared_temporal(tmp_path / ".fastmcp-temporal", ui=False) as server:
        listing = await asyncio.to_thread(run, "tasks", "list", cwd=tmp_path)
        assert listing.returncode == 0, listing.stderr
        assert listing.stdout.startswith("TASKID"), listing.stdout
        unknown = await asyncio.to_thread(run, "tasks", "show", "nope", cwd=tmp_path)
        assert_one_line_failure(unknown, "Task 'nope' not found")
        closed = await asyncio.to_thread(closed_pipe, tmp_path)
        assert_one_line_failure(closed, "broken pipe")
        assert shared.running(tmp_path / ".fastmcp-temporal") == server


JOINING_SERVER = """
from fastmcp import FastMCP
from fastmcp_temporal import TemporalTasks

mcp = FastMCP("joined")
mcp.add_extension(TemporalTasks())


@mcp.tool(task=True)
async def shout(text: str) -> str:
    return text.upper()
"""


async def test_a_worker_joins_the_embedded_server_of_its_folder(tmp_path: Path) -> None:
    """``fastmcp-temporal worker`` with nothing configured runs the legs of a front end."""
    (tmp_path / "server.py").write_text(JOINING_SERVER)
    data_dir = tmp_path / ".fastmcp-temporal"
    front = FastMCP("joined")
    front.add_extension(TemporalTasks(data_dir=data_dir, run_worker=False, ui=False))

    @front.tool(task=True)
    async def shout(text: str) -> str:
        raise AssertionError("the front end runs no legs")

    async with Client(front) as client:
        server = shared.running(data_dir)
        assert server is not None
        worker = Process(
            "worker",
            [str(BIN / "fastmcp-temporal"), "worker", "server.py"],
            # Wide: the start-up line (FastMCP's rich handler) stays on one line.
            {"TEMPORAL_ADDRESS": "", "COLUMNS": "1000"},
            tmp_path / "worker.log",
            cwd=tmp_path,
        )
        try:
            await worker.wait_for_output("fastmcp-temporal worker ready")
            task = await call_tool_task(client, "shout", {"text": "joined"})
            final = await task.wait(timeout=60)
        finally:
            worker.stop()
    assert final.result is not None and final.result["structuredContent"] == {"result": "JOINED"}
    assert f"embedded Temporal at {server.address}" in worker.output(), "joined, not started"


def closed_pipe(cwd: Path) -> subprocess.CompletedProcess[str]:
    """``fastmcp-temporal tasks list | (reader that already left)``."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        process = forks.popen(
            [str(BIN / "fastmcp-temporal"), "tasks", "list"],
            cwd=cwd,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        os.close(write_end)
    _, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, "", stderr)


def test_the_record_is_what_a_joiner_reads(tmp_path: Path) -> None:
    assert EmbeddedServer.read(tmp_path) is None
    (tmp_path / shared.RECORD).write_text("{not json")
    assert EmbeddedServer.read(tmp_path) is None
    assert shared.running(tmp_path) is None


AGENT_TOOLS = """
from langgraph.graph import MessagesState, StateGraph
from temporalio import workflow


@workflow.defn
class OrderAgent:
    @workflow.run
    async def run(self, order: str) -> str:
        return order
"""
AGENT_SERVER = """
from fastmcp import FastMCP
from fastmcp_temporal import TemporalTasks, workflow_tool
from agent_tools import OrderAgent

mcp = FastMCP("orders")
mcp.add_extension(TemporalTasks())  # no LangGraphPlugin
mcp.add_tool(workflow_tool(OrderAgent))
"""


async def test_a_worker_the_sandbox_refuses_names_the_import_and_the_plugin(
    tmp_path: Path, temporal_server: EmbeddedServer
) -> None:
    """A workflows module that imports LangGraph, on a server without ``LangGraphPlugin``:
    the worker's one line names the import, the restricted name it reaches, and the plugin
    (temporalio alone says ``RuntimeError: Failed validating workflow OrderAgent``)."""
    pytest.importorskip("langgraph", reason="the langgraph extra is not installed")
    (tmp_path / "agent_tools.py").write_text(AGENT_TOOLS)
    (tmp_path / "server.py").write_text(AGENT_SERVER)
    result = await asyncio.to_thread(
        run, "worker", "server.py", "--address", temporal_server.address, cwd=tmp_path
    )
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("fastmcp-temporal worker: Failed validating workflow OrderAgent: "), line
    assert "agent_tools imports langgraph.graph, which reaches http.client.IncompleteRead" in line
    assert "LangGraphPlugin (from temporalio.langgraph import LangGraphPlugin" in line, line
    assert "with_passthrough_modules('langgraph')" in line, line


def test_the_one_line_follows_causes_to_the_innermost() -> None:
    """``raise ... from err`` and an error raised while handling another both lead inward;
    a context its author suppressed (``from None``) does not."""

    def chained() -> None:
        try:
            try:
                {}["workflow"]
            except KeyError:
                raise OSError("no such file") from None
        except OSError as err:
            raise RuntimeError("Failed validating workflow OrderAgent") from err

    with pytest.raises(RuntimeError) as failed:
        chained()
    assert one_line(failed.value) == (
        "RuntimeError: Failed validating workflow OrderAgent (cause: OSError: no such file)"
    )
    assert one_line(ExceptionGroup("many", [failed.value])) == one_line(failed.value)


async def test_a_server_the_sandbox_refuses_ends_with_the_same_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, temporal_tasks: Callable[..., TemporalTasks]
) -> None:
    """A server with its worker in process fails to start with the worker's explanation
    (the last line of the traceback a ``fastmcp run`` prints)."""
    pytest.importorskip("langgraph", reason="the langgraph extra is not installed")
    (tmp_path / "refused_agent_tools.py").write_text(AGENT_TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    from refused_agent_tools import OrderAgent  # type: ignore[import-not-found]

    mcp = FastMCP("orders")
    mcp.add_extension(temporal_tasks())
    mcp.add_tool(workflow_tool(OrderAgent))
    with pytest.raises(Exception) as refused:
        async with Client(mcp):
            pass
    (explained,) = [e for e in causes(refused.value) if isinstance(e, WorkflowSandboxError)]
    assert "refused_agent_tools imports langgraph.graph" in str(explained), explained
    assert "LangGraphPlugin" in str(explained), explained


CLOCKED_TOOLS = """
import datetime

from temporalio import workflow

STARTED = datetime.datetime.now()


@workflow.defn
class Clocked:
    @workflow.run
    async def run(self) -> str:
        return str(STARTED)
"""


async def test_a_workflow_module_that_reads_the_clock_at_import_is_told_where_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, temporal_client: TemporalClient
) -> None:
    """The restriction in the workflow's own module: nothing to pass through, so the
    sentence says what it reached and where it belongs instead."""
    (tmp_path / "clocked_tools.py").write_text(CLOCKED_TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    from clocked_tools import Clocked  # type: ignore[import-not-found]

    with pytest.raises(RuntimeError) as refused:
        Worker(temporal_client, task_queue="clocked", workflows=[Clocked])
    explained = explain(refused.value)
    assert explained is not None
    assert str(explained) == (
        "Failed validating workflow Clocked: clocked_tools uses datetime.datetime.now while it "
        "is imported, which Temporal's workflow sandbox restricts: do it in an activity, or at "
        "run time through workflow.* (workflow.now(), workflow.random())"
    )
