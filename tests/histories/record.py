"""Record the task workflow's histories from a real dev server: the replay gate's input.

    .venv/bin/python -m tests.histories.record              # record every path without a file yet
    .venv/bin/python -m tests.histories.record local_leg    # record named paths (new ones)
    .venv/bin/python -m tests.histories.record --list       # the paths and their files

It starts its own ``temporal server start-dev`` (``DevServer``, a throw-away
SQLite file), runs each path of ``catalog.PATHS`` concurrently -- a real FastMCP
server with ``TemporalTasks`` and an in-process worker, driven over HTTP --
and writes each workflow run's history (``fetch_history().to_json()``) to
``tests/histories/<file>.json`` (a later generation's ``<file>`` names its
folder: ``v2/plain_result``). ``ttl_running`` alone takes ~65 s (a task is
ended by Temporal at its TTL plus one minute).

Record a history for every new path. Never re-record an existing one to make
the gate pass: it is the proof that tasks already in flight keep replaying
(see CONTRIBUTING.md). Naming a path that has its files already is therefore
refused unless ``--overwrite`` says so.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
from pathlib import Path

import fastmcp
from temporalio.client import Client as TemporalClient
from temporalio.contrib.pydantic import pydantic_data_converter

from fastmcp_temporal import DevServer
from fastmcp_temporal.server.core.codec import KEY_ENV, task_data_converter
from fastmcp_temporal.server.temporal.connection import exit_now
from tests.histories.catalog import PATHS
from tests.histories.harness import Harness, TaskPath
from tests.histories.paths import TEST_ENCRYPTION_KEY
from tests.histories.replay import HISTORIES

#: Paths recorded at once: enough to overlap ``ttl_running``'s minute, few
#: enough for a 2-core machine.
CONCURRENCY = 4


def history_file(name: str) -> Path:
    return HISTORIES / f"{name}.json"


async def record(paths: list[TaskPath]) -> None:
    with tempfile.TemporaryDirectory(prefix="record-histories-") as data_dir:
        server = await DevServer.start(data_dir=Path(data_dir), ui=False)
        try:
            client = await TemporalClient.connect(
                server.address, data_converter=pydantic_data_converter
            )
            sealed = await TemporalClient.connect(
                server.address, data_converter=task_data_converter(TEST_ENCRYPTION_KEY)
            )
            harness = Harness(client, sealed)
            slots = asyncio.Semaphore(CONCURRENCY)

            async def one(path: TaskPath) -> None:
                async with slots:
                    runs = await path.drive(harness)
                assert set(runs) == set(path.files), (path.name, sorted(runs))
                for file, run in runs.items():
                    handle = client.get_workflow_handle(run.workflow_id, run_id=run.run_id)
                    history = await handle.fetch_history()
                    history_file(file).parent.mkdir(exist_ok=True)
                    history_file(file).write_text(history.to_json() + "\n")
                    print(f"{file}.json  {path.name}  {len(history.events)} events", flush=True)

            # The slowest first, so its minute overlaps the others.
            await asyncio.gather(*(one(path) for path in sorted(paths, key=_slow_first)))
        finally:
            server.stop()


def _slow_first(path: TaskPath) -> int:
    return 0 if path.name == "ttl_running" else 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", help="paths to record (default: those with no file)")
    parser.add_argument("--overwrite", action="store_true", help="re-record existing files")
    parser.add_argument("--list", action="store_true", help="list the paths and their files")
    args = parser.parse_args(argv)
    by_name = {path.name: path for path in PATHS}
    if args.list:
        for path in PATHS:
            print(path.name, " ".join(f"{file}.json" for file in path.files))
        return 0
    unknown = sorted(set(args.paths) - set(by_name))
    if unknown:
        parser.error(f"unknown paths {unknown}; known: {sorted(by_name)}")
    if args.paths:
        chosen = [by_name[name] for name in args.paths]
        existing = [f for path in chosen for f in path.files if history_file(f).exists()]
        if existing and not args.overwrite:
            parser.error(f"{existing} exist: re-recording hides a replay break (see --overwrite)")
    else:
        chosen = [path for path in PATHS if not all(history_file(f).exists() for f in path.files)]
    if not chosen:
        print("every path has its histories; nothing to record")
        return 0
    os.environ.pop(KEY_ENV, None)  # the plain paths must not be encrypted by an ambient key
    # One line per history is the output: each path's uvicorn would log every
    # request, and its cancelled lifespan at shutdown as an error.
    fastmcp.settings.log_level = "CRITICAL"
    logging.getLogger("fastmcp").setLevel(logging.CRITICAL)
    asyncio.run(record(chosen))
    return 0


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
