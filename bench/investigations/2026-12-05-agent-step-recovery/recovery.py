"""How long an agent's model turn takes to come back after its worker is killed (SIGKILL).

    .venv/bin/python bench/investigations/2026-12-05-agent-step-recovery/recovery.py

For each framework's default activity options and a shortened one: a workflow makes
one model turn whose model blocks; once it is called, a second worker starts and the
first is killed; the time from the kill to the model's second call is the recovery.
Plain temporalio workers with each framework's plugin: what this measures is the
plugins' activity options, not this package.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.client import Client
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents.testing import TestModelProvider
from temporalio.worker import Worker

from fastmcp_temporal.testing import shared_temporal

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

CASES = {
    "openai default (start-to-close 60 s)": ("openai", None, "OpenAIOneTurn"),
    "openai heartbeat_timeout=5 s": ("openai", 5.0, "OpenAIOneTurn"),
    "pydantic-ai default (heartbeat 30 s)": ("pydantic", None, "PydanticDefault"),
    "pydantic-ai heartbeat_timeout=5 s": ("pydantic", None, "PydanticShort"),
}


def plugin(framework: str, heartbeat_s: float | None) -> object:
    if framework == "openai":
        from openai_turn import BlockingModel

        params = ModelActivityParameters(
            heartbeat_timeout=timedelta(seconds=heartbeat_s) if heartbeat_s else None
        )
        return OpenAIAgentsPlugin(
            model_provider=TestModelProvider(BlockingModel()), model_params=params
        )
    return PydanticAIPlugin()


async def work(address: str, queue: str, framework: str, heartbeat_s: float | None) -> None:
    client = await Client.connect(address, plugins=[plugin(framework, heartbeat_s)])  # type: ignore[list-item]
    if framework == "openai":
        from openai_turn import OpenAIOneTurn

        workflows: list[type] = [OpenAIOneTurn]
    else:
        from pydantic_turn import PydanticDefault, PydanticShort

        workflows = [PydanticDefault, PydanticShort]
    async with Worker(client, task_queue=queue, workflows=workflows):
        print("ready", flush=True)
        await asyncio.Event().wait()


def start_worker(
    address: str, queue: str, framework: str, hb: float | None, env: dict
) -> subprocess.Popen[str]:
    args = [sys.executable, __file__, "--worker", address, queue, framework, str(hb or "")]
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


async def measure(address: str, name: str) -> tuple[float, float]:
    framework, heartbeat_s, workflow_name = CASES[name]
    markers = Path(tempfile.mkdtemp())
    env = {**os.environ, "RECOVERY_MARKERS": str(markers)}
    queue = f"recovery-{uuid.uuid4().hex[:8]}"
    client = await Client.connect(address, plugins=[plugin(framework, heartbeat_s)])  # type: ignore[list-item]
    first = start_worker(address, queue, framework, heartbeat_s, env)
    handle = await client.start_workflow(workflow_name, id=queue, task_queue=queue)
    while not list(markers.glob("call-*")):
        await asyncio.sleep(0.05)
    second = start_worker(address, queue, framework, heartbeat_s, env)
    first.send_signal(signal.SIGKILL)
    killed = time.time()
    while len(list(markers.glob("call-*"))) < 2:
        await asyncio.sleep(0.05)
    began = float((markers / f"call-{first.pid}").read_text())
    again = float((markers / f"call-{second.pid}").read_text())
    (markers / "release").write_text("")
    assert await handle.result() == "done"
    second.kill()
    return killed - began, again - killed


async def main() -> None:
    async with shared_temporal(Path(tempfile.mkdtemp()) / ".fastmcp-temporal", ui=False) as server:
        print("| model turn | killed after the call began | called again after the kill |")
        print("|---|---|---|")
        for name in CASES:
            into, recovered = await measure(server.address, name)
            print(f"| {name} | {into:.1f} s | {recovered:.1f} s |", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", nargs=4)
    args = parser.parse_args()
    if args.worker:
        address, queue, framework, hb = args.worker
        asyncio.run(work(address, queue, framework, float(hb) if hb else None))
    else:
        asyncio.run(main())
