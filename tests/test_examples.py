"""Every example and every code sample of the docs runs to its end, as a user runs it.

Each server starts as its own process on a free port, joined to the session's
embedded Temporal through ``FASTMCP_TEMPORAL_DATA_DIR`` (exactly what a server
with no address configured does in its own folder), and its client runs as
another process until it exits. The servers' task queues are per server name
(``mcp-tasks-<name>``), so they never take each other's legs.
"""

from __future__ import annotations

import asyncio
import contextlib
import runpy
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from fastmcp import Client, FastMCP

from fastmcp_temporal import TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.testing import EmbeddedServer
from tests.processes.running import ROOT, Process, serving_on_free_port

SNIPPETS = ROOT / "docs" / "snippets"


def joining(server: EmbeddedServer) -> dict[str, str]:
    """The environment of a process that should use the session's Temporal, unconfigured."""
    return {"FASTMCP_TEMPORAL_DATA_DIR": server.data_dir, "TEMPORAL_ADDRESS": ""}


@contextlib.asynccontextmanager
async def serving(
    name: str, args: list[str], server: EmbeddedServer, logs: Path
) -> AsyncIterator[str]:
    """Start ``args`` with ``--port <free>`` and yield its MCP URL once it listens."""
    async with serving_on_free_port(name, args, joining(server), logs / f"{name}.log") as url:
        yield url


async def run_to_the_end(name: str, args: list[str], server: EmbeddedServer, logs: Path) -> str:
    """Run a client process to its exit; its output, which must end in success."""
    process = Process(name, args, joining(server), logs / f"{name}.log")
    try:
        code = await process.exit_code(timeout=120)
    finally:
        process.stop()
    assert code == 0, f"{name} exited {code}:\n{process.output()[-3000:]}"
    return process.output()


async def test_the_demo_client_tours_the_demo_server(
    temporal_server: EmbeddedServer, tmp_path: Path
) -> None:
    """``./dev demo`` + ``./dev client``; then the Python-clients guide's sample on it."""
    demo = [sys.executable, "examples/demo_server.py"]
    async with serving("demo-server", demo, temporal_server, tmp_path) as url:
        tour = await run_to_the_end(
            "demo-client",
            [sys.executable, "-m", "examples.demo_client", "--url", url],
            temporal_server,
            tmp_path,
        )
        guide = await run_to_the_end(
            "clients-snippet",
            [sys.executable, str(SNIPPETS / "clients.py"), "--url", url],
            temporal_server,
            tmp_path,
        )
    assert "result: crunched 3 steps" in tour
    assert "server asks: 'Really delete notes.txt?'" in tour
    assert "result: deleted notes.txt" in tour
    assert "after tasks/cancel: cancelled" in tour
    assert "isError True: " in tour and "the upstream service is down" in tour
    assert tour.rstrip().endswith("to see each task")
    assert guide.split() == ["crunched", "3", "steps", "deleted", "a.txt"]


async def test_the_research_agent_client_runs_against_its_server(
    temporal_server: EmbeddedServer, tmp_path: Path
) -> None:
    agent = [sys.executable, "-m", "examples.research_agent.server"]
    async with serving("research-server", agent, temporal_server, tmp_path) as url:
        output = await run_to_the_end(
            "research-client",
            [sys.executable, "-m", "examples.research_agent.client", "--url", url],
            temporal_server,
            tmp_path,
        )
    assert "agent asks: Search for: durable execution overview" in output
    assert "3 sources on 'durable execution'" in output


async def test_the_getting_started_tool_and_client(
    temporal_server: EmbeddedServer, tmp_path: Path
) -> None:
    server = [sys.executable, str(SNIPPETS / "first_tool.py")]
    async with serving("first-tool", server, temporal_server, tmp_path) as url:
        output = await run_to_the_end(
            "first-client",
            [sys.executable, str(SNIPPETS / "first_client.py"), "--url", url],
            temporal_server,
            tmp_path,
        )
    lines = output.splitlines()
    assert lines[0] == "words: 3"
    assert lines[1].startswith("task ") and lines[1].split()[-1] in ("working", "completed")
    assert lines[2] == "words: 3"


async def test_the_steps_sample_runs_each_step(
    temporal_server: EmbeddedServer, tmp_path: Path
) -> None:
    server = [sys.executable, str(SNIPPETS / "steps_tool.py")]
    async with (
        serving("steps-tool", server, temporal_server, tmp_path) as url,
        Client(url) as client,
    ):
        task = await call_tool_task(client, "report", {"url": "https://example.com"})
        result = await task.result(timeout=60)
    assert result.data == "published: summary of the page at https://example.com"


# --8<-- [start:testing]
async def test_a_task_tool_runs_to_its_result(temporal_tasks: Callable[..., TemporalTasks]) -> None:
    mcp = FastMCP("testing-guide")
    mcp.add_extension(temporal_tasks())  # the session's Temporal, this test's own task queue

    @mcp.tool(task=True)
    async def double(n: int) -> int:
        return 2 * n

    async with Client(mcp) as client:  # conftest: enable_transparent_tasks()
        task = await call_tool_task(client, "double", {"n": 21})
        assert (await task.result()).data == 42


# --8<-- [end:testing]


async def test_the_own_worker_sample_runs_a_front_ends_legs(
    temporal_server: EmbeddedServer,
    temporal_tasks: Callable[..., TemporalTasks],
    task_queue: str,
) -> None:
    run_legs = runpy.run_path(str(SNIPPETS / "own_worker.py"))["run_legs"]
    mcp = FastMCP("own-worker")
    mcp.add_extension(temporal_tasks(run_worker=False))

    @mcp.tool(task=True)
    async def shout(text: str) -> str:
        return text.upper()

    worker = asyncio.create_task(run_legs(mcp, temporal_server.address, task_queue))
    try:
        async with Client(mcp) as client:
            task = await call_tool_task(client, "shout", {"text": "legs"})
            assert (await task.result(timeout=60)).data == "LEGS"
    finally:
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker


async def test_the_encryption_sample_connects_with_the_task_codec(
    temporal_server: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FASTMCP_TEMPORAL_ENCRYPTION_KEY", "ab" * 32)
    connect = runpy.run_path(str(SNIPPETS / "encrypted_client.py"))["connect"]
    client = await connect(temporal_server.address)
    codec = client.data_converter.payload_codec
    assert codec is not None
    (sealed,) = await codec.encode(client.data_converter.payload_converter.to_payloads(["secret"]))
    assert sealed.metadata["encoding"] == b"binary/encrypted" and b"secret" not in sealed.data


def test_the_readme_example_is_the_getting_started_tool() -> None:
    """The README cannot include files: its example is checked against the one CI runs."""
    sample = (SNIPPETS / "first_tool.py").read_text()
    tool = sample.split("# --8<-- [start:tool]\n")[1].split("# --8<-- [end:tool]")[0]
    assert f"```python\n{tool.rstrip()}\n```" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("sample", sorted(p.name for p in SNIPPETS.glob("*.py")))
def test_every_sample_imports(sample: str) -> None:
    """Every file a page includes at least loads: no stale import path on any page."""
    runpy.run_path(str(SNIPPETS / sample), run_name="docs_sample")
