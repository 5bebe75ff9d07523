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
import importlib
import re
import runpy
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from fastmcp import Client, FastMCP

from fastmcp_temporal import TemporalTasks, workflow_tool
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.testing import EmbeddedServer
from tests.processes.running import ROOT, Process, serving_on_free_port

SNIPPETS = ROOT / "docs" / "snippets"
DOCS = ROOT / "docs"

#: What the configuration samples read from the environment (tokens of made-up servers).
SAMPLE_ENV = {"SEARCH_TOKEN": "sample-token", "CI_KEY": "sample-key"}


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


async def test_the_agents_client_calls_each_framework_as_a_host_does(
    temporal_server: EmbeddedServer, tmp_path: Path
) -> None:
    """``python -m examples.agents.client``: plain ``tools/call``s (no tasks extension)
    of the three frameworks' agent tools, its server in process on the session's Temporal."""
    pytest.importorskip("temporalio.openai_agents", reason="needs the openai-agents extra")
    pytest.importorskip("temporalio.langgraph", reason="needs the langgraph extra")
    pytest.importorskip("pydantic_ai.durable_exec.temporal", reason="needs pydantic-ai")
    output = await run_to_the_end(
        "agents-client", [sys.executable, "-m", "examples.agents.client"], temporal_server, tmp_path
    )
    asked = "agent asks: The agent suggests 'escalate: enterprise customer'. Go ahead? -> yes"
    assert output.count(asked) == 3, output
    for tool in ("openai_triage", "langgraph_triage", "triage_ticket"):
        assert f"{tool}: {{'ticket': 'login broken for ada@example.com', 'verdict': " in output
    assert output.count("'verdict': 'escalate: enterprise customer', 'approved': True}") == 3


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


async def test_a_retried_call_with_the_idempotency_sample_gets_its_first_task(
    temporal_tasks: Callable[..., TemporalTasks],
) -> None:
    start_crunch = runpy.run_path(str(SNIPPETS / "idempotent_call.py"))["start_crunch"]
    mcp = FastMCP("idempotency-guide")
    mcp.add_extension(temporal_tasks())

    @mcp.tool(task=True)
    async def crunch(dataset: str) -> str:
        return f"crunched {dataset}"

    async with Client(mcp) as client:
        first = await start_crunch(client, key="retry-me")
        retry = await start_crunch(client, key="retry-me")
        other = await start_crunch(client)
        assert retry.task_id == first.task_id != other.task_id
        assert (await retry.result(timeout=60)).data == "crunched sales.csv"


async def test_the_sampling_samples_answer_each_other(
    temporal_tasks: Callable[..., TemporalTasks], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agents guide's workflow, answered by its client's ``my_model``."""
    monkeypatch.syspath_prepend(str(SNIPPETS))  # the sandbox re-imports the workflow by name
    triage = importlib.import_module("sampling_triage").Triage
    my_model = runpy.run_path(str(SNIPPETS / "sampling_client.py"))["my_model"]
    mcp = FastMCP("agents-guide")
    mcp.add_extension(temporal_tasks())
    mcp.add_tool(workflow_tool(triage))

    async with Client(mcp, sampling_handler=my_model) as client:
        task = await call_tool_task(client, "triage", {"ticket": "login broken"})
        result = await task.result(timeout=60)
    assert result.data == "reproduce the login failure, then page the auth team"


async def test_the_remote_triage_sample_searches_then_deploys(
    temporal_tasks: Callable[..., TemporalTasks], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remote-MCP guide's workflow, its named connections two in-memory servers."""
    monkeypatch.syspath_prepend(str(SNIPPETS))  # the sandbox re-imports the workflow by name
    triage = importlib.import_module("remote_triage").Triage
    search, builds = FastMCP("search"), FastMCP("builds")

    @search.tool
    def web_search(q: str) -> str:
        return f"3 hits for {q}"

    @builds.tool
    def deploy(ref: str) -> str:
        return f"deployed {ref}"

    mcp = FastMCP("remote-guide")
    connections = {"search": lambda: Client(search), "builds": lambda: Client(builds)}
    mcp.add_extension(temporal_tasks(remote_servers=connections))
    mcp.add_tool(workflow_tool(triage))

    async with Client(mcp) as client:
        task = await call_tool_task(client, "triage", {"incident": "login down"})
        result = await task.result(timeout=60)
    assert result.content[0].text == "deployed fix"


@pytest.mark.parametrize("sample", sorted(p.name for p in SNIPPETS.glob("*.py")))
def test_every_sample_imports(sample: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file a page includes at least loads: no stale import path on any page."""
    for name, value in SAMPLE_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(SNIPPETS))  # a sample's workflow is its own module
    runpy.run_path(str(SNIPPETS / sample), run_name="docs_sample")


def python_blocks(page: str) -> list[tuple[int, list[str]]]:
    """Each fenced Python block of a Markdown page: its first line number and its lines."""
    found: list[tuple[int, list[str]]] = []
    fence: str | None = None
    for number, line in enumerate(page.splitlines(), start=1):
        stripped = line.strip()
        if fence is None:
            opening = re.match(r"(`{3,}|~{3,})\s*\{?\s*\.?([\w+-]*)", stripped)
            if opening:
                fence = opening.group(1)
                language = opening.group(2).lower()
                body: list[str] = []
                if language in ("python", "py", "python3"):
                    found.append((number, body))
        elif stripped.startswith(fence) and stripped.strip(fence[0]) == "":
            fence = None
        else:
            body.append(stripped)
    return found


def test_python_blocks_on_the_pages_are_includes() -> None:
    """Issue 22: a page's Python is a real file CI imports (``--8<--``), never a copy."""
    copied = [
        f"{page.relative_to(ROOT)}:{number}"
        for page in sorted(DOCS.rglob("*.md"))
        for number, lines in python_blocks(page.read_text())
        if any(line and not line.startswith("--8<--") for line in lines)
    ]
    assert copied == [], f"inline Python blocks (put them in docs/snippets/): {copied}"


def test_the_page_guard_sees_an_inline_block() -> None:
    page = '```bash\nls\n```\n\n```python\nprint(1)\n```\n\n```python\n--8<-- "a.py:x"\n```\n'
    assert python_blocks(page) == [(5, ["print(1)"]), (9, ['--8<-- "a.py:x"'])]
