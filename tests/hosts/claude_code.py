"""Claude Code, the binary bundled in the ``claude-agent-sdk`` wheel, run as ``claude -p``.

Configured as a user would with nothing but flags and environment: our server as an
HTTP MCP server (``--mcp-config``, and no other: ``--strict-mcp-config``), its tools
allowed without a prompt (``--allowedTools mcp__durable``), and
``ENABLE_TOOL_SEARCH=false``: otherwise Claude Code offers MCP tools to the model
only through its tool search, and the model would see no tool to call. It talks to
the scripted model at ``ANTHROPIC_BASE_URL`` and to nothing else (no telemetry,
error reports or update checks). Its debug log (``--debug-file``) says when its idle
watchdog looked at a waiting call and what it decided.

``CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT`` is in milliseconds, 1000 at least (as the binary
reads it: ``Math.max(limit, 1000)``); a call with no response or progress for that
long is aborted, but the watchdog only looks every 30 s, so a call is cut at the
first 30 s tick past the limit.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from tests.hosts import PROMPT, SERVER, HostRun, base_env, fails_to_start, run_host

#: Where ``./dev`` leaves the output of a failed install of the ``hosts`` extra.
INSTALL_LOG = Path(sys.prefix) / "hosts-install.log"
#: How often the idle watchdog looks at a waiting call (``setInterval(..., 30000)``).
WATCHDOG_INTERVAL_S = 30


@functools.cache
def installed() -> Path:
    """The binary, checked to start; the calling test skips, saying why, if there is none."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        why = (
            f"its install failed: {INSTALL_LOG.read_text().strip()[-500:]}"
            if INSTALL_LOG.exists()
            else "claude-agent-sdk (the `hosts` extra) is not in this venv; ./dev test installs it"
        )
        pytest.skip(f"Claude Code is not installed: {why}")
    binary = Path(spec.submodule_search_locations[0]) / "_bundled" / "claude"
    if not binary.is_file():
        pytest.skip(f"Claude Code is not installed: claude-agent-sdk has no binary at {binary}")
    if (why := fails_to_start(binary)) is not None:
        pytest.skip(f"Claude Code does not start here: {why}")
    return binary


class ClaudeCode:
    """One user's Claude Code: its home and working directory under ``root``."""

    def __init__(
        self, root: Path, model_url: str, server_url: str, idle_timeout_ms: int | None = None
    ) -> None:
        self.binary = installed()
        self.root = root
        self.model_url = model_url
        self.server_url = server_url
        self.idle_timeout_ms = idle_timeout_ms
        (root / "work").mkdir(parents=True, exist_ok=True)

    async def run(self, timeout: float = 120) -> HostRun:
        """``claude -p``: the scripted model calls our tool, then answers with its result."""
        servers = {"mcpServers": {SERVER: {"type": "http", "url": self.server_url}}}
        debug_log = self.root / "debug.log"
        args = [
            str(self.binary),
            "-p",
            PROMPT,
            "--mcp-config",
            json.dumps(servers),
            "--strict-mcp-config",
            "--allowedTools",
            f"mcp__{SERVER}",
            "--output-format",
            "json",
            "--debug-file",
            str(debug_log),
        ]
        env = base_env(self.root / "home") | {
            "ANTHROPIC_BASE_URL": self.model_url,
            "ANTHROPIC_API_KEY": "scripted",
            "ENABLE_TOOL_SEARCH": "false",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
        if self.idle_timeout_ms is not None:
            env["CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT"] = str(self.idle_timeout_ms)
        stderr = self.root / "stderr.log"
        code, stdout = await run_host(args, env, self.root / "work", stderr, timeout)
        log = stderr.read_text() + (debug_log.read_text() if debug_log.exists() else "")
        try:
            answer = json.loads(stdout)["result"]
        except (ValueError, KeyError):
            raise AssertionError(f"no result printed:\n{stdout}\n{log[-3000:]}") from None
        return HostRun(code, answer, stdout, log)


def watchdog_ticks(run: HostRun, tool: str) -> list[int]:
    """The seconds into ``tool``'s call at which the idle watchdog looked at it."""
    return [int(s) for s in re.findall(rf"Tool '{tool}' still running \((\d+)s elapsed\)", run.log)]


def idle_aborts(run: HostRun, tool: str) -> list[str]:
    """The watchdog's words for each of ``tool``'s calls it aborted as idle."""
    return re.findall(rf"Tool '{tool}' aborting: (no response or progress[^\n]*)", run.log)
