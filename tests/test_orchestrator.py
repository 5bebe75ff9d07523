"""``examples/orchestrator``: the one command runs, offline, and prints the triage report.

Real processes: ``run.py`` starts the support desk and the triage server (each
its own process, one embedded Temporal in this test's directory), runs the
scripted client (it answers the agent's sampling request and the desk's
question relayed by the agent), and stops everything it started.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import eventually

ROOT = Path(__file__).resolve().parent.parent


def running_in(data_dir: Path) -> list[str]:
    """Command lines of live processes that use ``data_dir`` (servers, keeper, Temporal)."""
    listed = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    return [line for line in listed.stdout.splitlines() if str(data_dir) in line]


async def test_the_orchestrator_example_runs_with_one_command(tmp_path: Path) -> None:
    data_dir, report_file = tmp_path / "temporal", tmp_path / "report.json"
    run = await asyncio.create_subprocess_exec(
        sys.executable,
        "examples/orchestrator/run.py",
        "--data-dir",
        str(data_dir),
        "--report",
        str(report_file),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(run.communicate(), timeout=300)
    assert run.returncode == 0, stderr.decode()[-3000:]
    report = json.loads(report_file.read_text())
    assert report["plan"] == {
        "summary": "login fails after deploy",
        "component": "auth",
        "severity": "high",
    }
    assert report["planned_by"] == "scripted-planner", "the plan came from the client's model"
    assert report["investigation"]["environment"] == "production", (
        "the user's answer reached the desk"
    )
    assert report["investigation"]["findings"][0].startswith("auth: error rate")
    assert report["customer"] == {
        "email": "ada@example.com",
        "plan": "enterprise",
        "open_tickets": 2,
    }
    assert report["status"] == {"component": "auth", "healthy": False, "incident": "INC-1042"}
    assert report["similar"] == ["T-881 login loops after deploy", "T-874 SSO timeouts"]
    assert report["verdict"].startswith("page the auth on-call: INC-1042")
    assert "user asked: Which environment shows" in stdout.decode()
    # Both servers stopped by PID; the embedded Temporal follows its last user.
    await eventually(lambda: not running_in(data_dir), timeout=60)
