"""A real headless Chromium, driven over the DevTools protocol (CDP).

``chromium --headless --remote-debugging-port=0`` writes the port it chose to
``DevToolsActivePort`` in its profile directory; one websocket to the page
target then navigates, reads the rendered text and takes a screenshot. A single
page app (the Temporal Web UI) renders after its API calls answer, so the
caller polls the rendered text until it shows what it waits for, within a
deadline. The browser runs in its own process group and is stopped by PID.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import websockets

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)

#: The rendered text, including same-origin frames (the UI renders markdown in iframes).
_TEXT = """[document.body ? document.body.innerText : '',
 ...[...document.querySelectorAll('iframe')].map(f => {
   try { return f.contentDocument.body.innerText } catch (e) { return '' } })].join('\\n')"""


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    def __init__(self, socket: Any) -> None:
        self._socket = socket
        self._ids = itertools.count(1)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self._ids)
        await self._socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            message = json.loads(await asyncio.wait_for(self._socket.recv(), 30))
            if message.get("id") == message_id:
                if "error" in message:
                    raise RuntimeError(f"CDP {method}: {message['error']}")
                return message.get("result", {})

    async def text(self) -> str:
        result = await self.send("Runtime.evaluate", expression=_TEXT)
        return str(result.get("result", {}).get("value") or "")

    async def wait_for_text(self, *needles: str, timeout: float = 30.0) -> str:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            text = await self.text()
            if all(needle in text for needle in needles):
                return text
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"page never showed {needles}; it shows:\n{text[:3000]}")
            await asyncio.sleep(0.25)

    async def click(self, label: str) -> None:
        """Click the first link or button whose text is ``label``."""
        script = (
            "(() => { const e = [...document.querySelectorAll('a,button,[role=tab]')]"
            f".find(e => e.innerText.trim() === {json.dumps(label)});"
            " if (e) { e.click(); return true; } return false; })()"
        )
        result = await self.send("Runtime.evaluate", expression=script)
        assert result.get("result", {}).get("value") is True, f"nothing labelled {label!r}"

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))


async def _start_chromium(binary: str, profile: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Chromium and the DevTools port it wrote, or an error quoting what it printed.

    A first start on a fresh machine (CI installs Chromium just before the
    tests) can take long: a minute is allowed. Chromium's own output goes to
    ``chromium.log`` beside the profile, so a failure says why.
    """
    profile.mkdir(parents=True, exist_ok=True)
    log_path = profile.parent / f"{profile.name}-chromium.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    port_file = profile / "DevToolsActivePort"
    deadline = asyncio.get_running_loop().time() + 60
    while not port_file.exists() or not port_file.read_text().strip():
        if process.poll() is not None or asyncio.get_running_loop().time() > deadline:
            _stop(process)
            said = log_path.read_text(errors="replace")[-3000:]
            raise AssertionError(f"chromium never opened CDP; it printed:\n{said}")
        await asyncio.sleep(0.1)
    return process, port_file.read_text().split()[0]


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextlib.asynccontextmanager
async def open_page(url: str, profile: Path) -> AsyncIterator[Page]:
    binary = chromium_binary()
    assert binary is not None
    process, port = await _start_chromium(binary, profile)
    try:
        async with httpx.AsyncClient() as http:
            targets = (await http.get(f"http://127.0.0.1:{port}/json/list")).json()
        (target,) = [t for t in targets if t.get("type") == "page"][:1]
        async with websockets.connect(target["webSocketDebuggerUrl"], max_size=None) as socket:
            page = Page(socket)
            await page.send("Page.enable")
            await page.send("Page.navigate", url=url)
            yield page
    finally:
        _stop(process)
