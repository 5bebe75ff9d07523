"""The Continue CLI (npm ``@continuedev/cli``), run headless as ``cn -p``.

Configured as a user would, in a ``config.yaml`` given with ``--config``: the scripted
model as an OpenAI model (``apiBase``; it speaks Chat Completions), our server as a
streamable HTTP MCP server. Its tools run without asking (``--auto``). There is no
setting for how long it waits for a tool call: its MCP client calls with the SDK's
default, 60 s, and progress does not extend it. Telemetry is off
(``CONTINUE_CLI_ENABLE_TELEMETRY=0``); ``~/.continue`` is the run's own
(``CONTINUE_GLOBAL_DIR``). ``-p`` prints the final answer alone.
"""

from __future__ import annotations

from pathlib import Path

from tests.hosts import PROMPT, SERVER, HostRun, base_env, run_host
from tests.hosts.npm_host import NpmHost, installed

CONTINUE_CLI = NpmHost("Continue CLI", "continue-cli", "cn")


class ContinueCli:
    """One user's Continue CLI: its home, config and working directory under ``root``."""

    def __init__(self, root: Path, model_url: str, server_url: str) -> None:
        self.binary = installed(CONTINUE_CLI)
        self.root = root
        (root / "work").mkdir(parents=True, exist_ok=True)
        self.config = root / "config.yaml"
        self.config.write_text(
            "\n".join(
                [
                    "name: scripted",
                    "version: 1.0.0",
                    "schema: v1",
                    "models:",
                    "  - name: scripted",
                    "    provider: openai",
                    "    model: scripted",
                    "    apiKey: scripted",
                    f"    apiBase: {model_url}/v1",
                    "    roles:",
                    "      - chat",
                    "mcpServers:",
                    f"  - name: {SERVER}",
                    "    type: streamable-http",
                    f"    url: {server_url}",
                ]
            )
            + "\n"
        )

    async def run(self, timeout: float = 120) -> HostRun:
        """``cn -p``: the scripted model calls our tool, then answers with its result."""
        args = [str(self.binary), "-p", "--config", str(self.config), "--auto", PROMPT]
        env = base_env(self.root / "home") | {
            "CONTINUE_GLOBAL_DIR": str(self.root / "home" / ".continue"),
            "CONTINUE_CLI_ENABLE_TELEMETRY": "0",
        }
        stderr = self.root / "stderr.log"
        code, stdout = await run_host(args, env, self.root / "work", stderr, timeout)
        return HostRun(code, stdout.strip(), stdout, stderr.read_text())
