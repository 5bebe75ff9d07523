"""Cline's CLI (npm ``cline``: the platform binary ``@cline/cli-<platform>-<arch>``), run as
``cline --json PROMPT``.

Configured as a user would, in ``~/.cline/data/settings/``: the scripted model as an
OpenAI-compatible provider (``providers.json``, what ``cline auth -p openai -b URL``
writes; it speaks Chat Completions), our server as a streamable HTTP MCP server
(``cline_mcp_settings.json``, what ``cline mcp add`` writes) with the per-server
``timeout`` (seconds, 1 to 3600; 60 when unset, and progress does not extend it)
where a test sets one. A prompt on the command line runs in act mode with every
tool approved; ``CLINE_SESSION_BACKEND_MODE=local`` runs
the session in the process (the default starts a hub daemon, in a session of its own,
that outlives the run). ``--json`` prints one JSON object a line: the agent's events, and
last its ``run_result`` with the final answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.hosts import PROMPT, SERVER, HostRun, base_env, run_host
from tests.hosts.npm_host import NpmHost, installed

CLINE = NpmHost("Cline CLI", "cline", "cline")


class Cline:
    """One user's Cline: its home (and ``~/.cline``) and working directory under ``root``."""

    def __init__(
        self, root: Path, model_url: str, server_url: str, timeout_s: int | None = None
    ) -> None:
        self.binary = installed(CLINE)
        self.root = root
        (root / "work").mkdir(parents=True, exist_ok=True)
        settings = root / "home" / ".cline" / "data" / "settings"
        settings.mkdir(parents=True, exist_ok=True)
        server: dict[str, Any] = {"transport": {"type": "streamableHttp", "url": server_url}}
        if timeout_s is not None:
            server["timeout"] = timeout_s
        (settings / "cline_mcp_settings.json").write_text(
            json.dumps({"mcpServers": {SERVER: server}}, indent=2)
        )
        provider = {
            "provider": "openai-compatible",
            "apiKey": "scripted",
            "model": "scripted",
            "baseUrl": f"{model_url}/v1",
        }
        providers = {
            "version": 1,
            "lastUsedProvider": "openai-compatible",
            "modes": {},
            "providers": {
                "openai-compatible": {
                    "settings": provider,
                    "updatedAt": "2026-01-01T00:00:00.000Z",  # without it, the entry is ignored
                    "tokenSource": "manual",
                },
            },
        }
        (settings / "providers.json").write_text(json.dumps(providers, indent=2))

    async def run(self, timeout: float = 120) -> HostRun:
        """``cline --json``: the scripted model calls our tool, then answers with its result."""
        args = [str(self.binary), "--json", "--cwd", str(self.root / "work"), PROMPT]
        env = base_env(self.root / "home") | {
            "CLINE_SESSION_BACKEND_MODE": "local",
            "CLINE_NO_AUTO_UPDATE": "1",
        }
        stderr = self.root / "stderr.log"
        code, stdout = await run_host(args, env, self.root / "work", stderr, timeout)
        results = [event for event in events(stdout) if event.get("type") == "run_result"]
        if not results or results[-1].get("finishReason") != "completed":
            raise AssertionError(f"Cline did not finish:\n{stdout}\n{stderr.read_text()[-3000:]}")
        return HostRun(code, results[-1]["text"], stdout, stderr.read_text())


def events(stdout: str) -> list[dict[str, Any]]:
    """The events ``--json`` printed, one a line."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
