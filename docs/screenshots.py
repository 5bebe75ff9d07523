"""Take the Web UI screenshots of docs/concepts/web-ui.md from a real run.

    .venv/bin/python docs/screenshots.py      # needs chromium (Debian: apt-get install chromium)

What a user does after `./dev demo` and `./dev client`, in a fresh data directory
on free ports: the demo server starts its embedded Temporal (the start-up line
it logs gives the Web UI's URL), the demo client drives its tools, one more
`delete_file` is left waiting for its answer, and headless Chromium renders the
workflow list, that waiting task and a finished task's history into
docs/assets/. Everything it started is stopped by PID at the end.
"""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastmcp import Client  # noqa: E402

from fastmcp_temporal.client import TasksClientExtension, call_tool_task  # noqa: E402
from tests.processes.browser import chromium_binary, open_page  # noqa: E402
from tests.processes.running import Process  # noqa: E402

ASSETS = ROOT / "docs" / "assets"
UI_LINE = re.compile(r"Web UI (http://\S+)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def never_answered(*_: Any) -> dict[str, Any]:
    raise AssertionError("the parked task is left waiting")


async def main() -> None:
    assert chromium_binary() is not None, "chromium is not installed"
    work = Path(tempfile.mkdtemp(prefix="fastmcp-temporal-screenshots-"))
    env = {"FASTMCP_TEMPORAL_DATA_DIR": str(work / "data"), "TEMPORAL_ADDRESS": ""}
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = Process(
        "demo-server",
        [sys.executable, "examples/demo_server.py", "--port", str(port)],
        env,
        work / "server.log",
    )
    try:
        await server.wait_for_port(port)
        match = UI_LINE.search(server.output())
        assert match, f"no Web UI start-up line in:\n{server.output()}"
        ui = match.group(1).rstrip(")")
        tour = subprocess.run(
            [sys.executable, "-m", "examples.demo_client", "--url", url],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
        print(tour)
        crunch_id = re.search(r"tools/call returned task (\S+)", tour)
        assert crunch_id
        async with Client(
            url, elicitation_handler=never_answered, extensions=[TasksClientExtension()]
        ) as client:
            parked = await call_tool_task(client, "delete_file", {"filename": "q3-report.pdf"})
            await parked.wait(state="input_required", timeout=60)
            await shoot(ui, parked.task_id, crunch_id.group(1), work)
            await parked.cancel()
    finally:
        server.stop()


async def wide(page: Any) -> None:
    """A viewport wide enough for the list's Type and Summary columns."""
    await page.send(
        "Emulation.setDeviceMetricsOverride",
        width=1800,
        height=1000,
        deviceScaleFactor=1,
        mobile=False,
    )


async def shoot(ui: str, parked_id: str, finished_id: str, work: Path) -> None:
    ASSETS.mkdir(exist_ok=True)
    workflows = f"{ui}/namespaces/default/workflows"
    async with open_page(workflows, work / "chromium-list") as page:
        await wide(page)
        await page.wait_for_text("McpTask:crunch", "McpTask:delete_file", "McpTask:flaky")
        await asyncio.sleep(1)  # let the list settle (counts, relative times)
        await page.screenshot(ASSETS / "ui-workflows.png")
    async with open_page(f"{workflows}/mcp-anon-{parked_id}", work / "chromium-parked") as page:
        await wide(page)
        await page.wait_for_text("McpTask:delete_file", "RUNNING")
        await page.click("User Metadata")
        await page.wait_for_text("Really delete q3-report.pdf?")
        await asyncio.sleep(1)
        await page.screenshot(ASSETS / "ui-task-input-required.png")
    async with open_page(f"{workflows}/mcp-anon-{finished_id}", work / "chromium-done") as page:
        await wide(page)
        await page.wait_for_text("McpTask:crunch", "COMPLETED")
        await asyncio.sleep(1)
        await page.screenshot(ASSETS / "ui-task-history.png")
    print(f"screenshots in {ASSETS}")


if __name__ == "__main__":
    asyncio.run(main())
