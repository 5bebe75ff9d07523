"""The Gemini CLI (npm ``@google/gemini-cli``), run headless as ``gemini -p``.

Configured as a user would, in ``~/.gemini/settings.json``: our server as an HTTP MCP
server (``httpUrl``) that is trusted (its tools run without asking), with the
per-server ``timeout`` (milliseconds; 600 000 when unset, and progress does not
extend it) where a test sets one. It talks to the scripted model through
``GOOGLE_GEMINI_BASE_URL`` (the Gemini API with a key: the "gateway" auth that
variable selects by itself is refused headless, "Invalid auth method selected") and to nothing else:
no usage statistics, telemetry or update checks. ``--output-format json`` prints one
JSON object: the final answer (``response``) and the run's stats.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.hosts import PROMPT, SERVER, HostRun, base_env, run_host
from tests.hosts.npm_host import NpmHost, installed

GEMINI_CLI = NpmHost("Gemini CLI", "gemini-cli", "gemini")
#: The model it asks for (any name: the scripted model answers to all).
MODEL = "gemini-2.5-flash"


class GeminiCli:
    """One user's Gemini CLI: its home and working directory under ``root``."""

    def __init__(
        self, root: Path, model_url: str, server_url: str, timeout_ms: int | None = None
    ) -> None:
        self.binary = installed(GEMINI_CLI)
        self.root = root
        self.model_url = model_url
        (root / "work").mkdir(parents=True, exist_ok=True)
        server: dict[str, object] = {"httpUrl": server_url, "trust": True}
        if timeout_ms is not None:
            server["timeout"] = timeout_ms
        settings = {
            "mcpServers": {SERVER: server},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "security": {
                "auth": {"selectedType": "gemini-api-key"},
                "folderTrust": {"enabled": False},
            },
        }
        (root / "home" / ".gemini").mkdir(parents=True, exist_ok=True)
        (root / "home" / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2))

    async def run(self, timeout: float = 120) -> HostRun:
        """``gemini -p``: the scripted model calls our tool, then answers with its result."""
        args = [str(self.binary), "-p", PROMPT, "-m", MODEL, "--output-format", "json"]
        env = base_env(self.root / "home") | {
            "GOOGLE_GEMINI_BASE_URL": self.model_url,
            "GEMINI_API_KEY": "scripted",
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
        stderr = self.root / "stderr.log"
        code, stdout = await run_host(args, env, self.root / "work", stderr, timeout)
        try:
            answer = json.loads(stdout[stdout.index("{") :])["response"]
        except (ValueError, KeyError):
            raise AssertionError(
                f"Gemini CLI printed no answer:\n{stdout}\n{stderr.read_text()[-3000:]}"
            ) from None
        return HostRun(code, answer, stdout, stderr.read_text())
