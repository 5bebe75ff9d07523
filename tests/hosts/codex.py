"""The Codex CLI (npm ``@openai/codex`` and its platform binary), run as ``codex exec``.

``./dev test`` installs it into ``.hosts/`` with npm. Configured as a user would, in
``$CODEX_HOME/config.toml``: the scripted model as a provider speaking the Responses
API (``wire_api = "responses"``), our server as a streamable HTTP MCP server whose
tools run without asking (``default_tools_approval_mode = "approve"``: ``codex exec``
has nobody to ask), with ``tool_timeout_sec`` where a test sets one. Update checks,
analytics, plugins and apps are off: with them on it looks up ``api.github.com`` and
``chatgpt.com`` at start-up. ``RUST_LOG=codex_rmcp_client=info`` makes it log each
progress notification its MCP client receives, to standard error.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.hosts import PROMPT, SERVER, HostRun, base_env, fails_to_start, run_host

ROOT = Path(__file__).resolve().parent.parent.parent
#: The npm prefix ``./dev`` installs the CLI into, and where it leaves a failed install's output.
PREFIX = ROOT / ".hosts"
INSTALL_LOG = PREFIX / "codex-install.log"
BINARY = PREFIX / "node_modules" / ".bin" / "codex"


@functools.cache
def installed() -> None:
    """Check that the CLI runs; the calling test skips, saying why, if it does not."""
    if not BINARY.exists():
        why = (
            f"its install failed: {INSTALL_LOG.read_text().strip()[-500:]}"
            if INSTALL_LOG.exists()
            else f"nothing at {BINARY}; ./dev test installs it with npm"
        )
        pytest.skip(f"the Codex CLI is not installed: {why}")
    if (why := fails_to_start(BINARY)) is not None:
        pytest.skip(f"the Codex CLI does not start here: {why}")


class Codex:
    """One user's Codex: its ``CODEX_HOME``, home and working directory under ``root``."""

    def __init__(
        self, root: Path, model_url: str, server_url: str, tool_timeout_s: int | None = None
    ) -> None:
        installed()
        self.root = root
        (root / "work").mkdir(parents=True, exist_ok=True)
        (root / "codex-home").mkdir(parents=True, exist_ok=True)
        server = [f'url = "{server_url}"', 'default_tools_approval_mode = "approve"']
        if tool_timeout_s is not None:
            server.append(f"tool_timeout_sec = {tool_timeout_s}")
        (root / "codex-home" / "config.toml").write_text(
            "\n".join(
                [
                    'model = "scripted"',
                    'model_provider = "scripted"',
                    "check_for_update_on_startup = false",
                    "[analytics]",
                    "enabled = false",
                    "[features]",
                    "plugins = false",
                    "remote_plugin = false",
                    "apps = false",
                    "[model_providers.scripted]",
                    'name = "scripted model"',
                    f'base_url = "{model_url}/v1"',
                    'wire_api = "responses"',
                    f"[mcp_servers.{SERVER}]",
                    *server,
                ]
            )
            + "\n"
        )

    async def run(self, timeout: float = 120) -> HostRun:
        """``codex exec``: the scripted model calls our tool, then answers with its result."""
        args = [str(BINARY), "exec", "--skip-git-repo-check", "--ephemeral", "--json", PROMPT]
        env = base_env(self.root / "home") | {
            "CODEX_HOME": str(self.root / "codex-home"),
            "RUST_LOG": "codex_rmcp_client=info",
        }
        stderr = self.root / "stderr.log"
        code, stdout = await run_host(args, env, self.root / "work", stderr, timeout)
        messages = [item["text"] for item in _items(stdout) if item["type"] == "agent_message"]
        assert messages, f"Codex printed no answer:\n{stdout}\n{stderr.read_text()[-3000:]}"
        return HostRun(code, messages[-1], stdout, stderr.read_text())


def tool_calls(run: HostRun) -> list[dict[str, Any]]:
    """The MCP tool calls the run made, as ``codex exec --json`` reports each one ended."""
    return [item for item in _items(run.stdout) if item["type"] == "mcp_tool_call"]


def progress_received(run: HostRun) -> list[str | None]:
    """The message of each progress notification Codex's MCP client received, in order."""
    logged = r"MCP server progress notification \(token: .*?message: (.*)\)$"
    messages = re.findall(logged, run.log, re.MULTILINE)  # None, or Some("the message")
    return [None if text == "None" else json.loads(text[len("Some(") : -1]) for text in messages]


def _items(stdout: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [event["item"] for event in events if event.get("type") == "item.completed"]
