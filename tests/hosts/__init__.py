"""Real MCP hosts for tests, each with a scripted model: Claude Code, the Codex CLI, the
Gemini CLI, Cline and the Continue CLI.

- ``model_api``: the model API a host talks to, on 127.0.0.1 (``ScriptedModel``): its
  first turn calls one of our tools, its next turn quotes what the tool returned (or
  calls again, when the result asks it to).
- ``claude_code``, ``codex``, ``gemini_cli``, ``cline``, ``continue_cli``: start the
  host's real binary, non-interactive, with a fresh home, no network but 127.0.0.1,
  pointed at the scripted model and at our server (known to every host as
  ``SERVER``); each run returns a ``HostRun``.
- ``wire_log``: what crossed the wire between a host and our server, recorded at the
  server's HTTP edge.

Where the hosts come from: ``./dev test`` installs Claude Code with the ``hosts``
extra (the ``claude-agent-sdk`` wheel bundles the binary), and the others with npm
into ``.hosts/`` (``npm_host``), each at the version ``dev`` pins. A host that is not
installed skips its tests, naming why.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: The name our server has in both hosts' configuration (its tools: ``mcp__durable__<tool>``).
SERVER = "durable"
#: What the user asks; the scripted model calls the tool whatever the words.
PROMPT = "Run the tool."


@dataclass(frozen=True)
class HostRun:
    """One run of a host: how it exited, its final answer, what it printed and logged."""

    exit_code: int
    answer: str
    stdout: str
    log: str


async def run_host(
    args: Sequence[str], env: Mapping[str, str], cwd: Path, log: Path, timeout: float
) -> tuple[int, str]:
    """Run a host to its end (``timeout`` at most): its exit code and standard output.

    Standard error goes to ``log``. The host runs in a process group of its own,
    killed whole when it ends or overruns, so none of its helpers outlives the test.
    """
    with open(log, "ab") as errors:
        process = await asyncio.create_subprocess_exec(
            *args,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=errors,
            start_new_session=True,
        )
    try:
        stdout, _ = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        raise AssertionError(
            f"{args[0]} did not finish in {timeout} s; its log:\n{log.read_text()[-3000:]}"
        ) from None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    return await process.wait(), stdout.decode(errors="replace")


def fails_to_start(binary: Path) -> str | None:
    """Why ``binary --version`` fails (its standard error), or ``None`` if it runs."""
    with tempfile.TemporaryDirectory() as home:
        ran = subprocess.run(
            [binary, "--version"], env=base_env(Path(home)), capture_output=True, text=True
        )
    return None if ran.returncode == 0 else ran.stderr.strip()[-500:]


def base_env(home: Path) -> dict[str, str]:
    """A host's environment: a fresh home, the system's ``PATH``, nothing else of ours."""
    home.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
