"""What idempotency keys and the per-caller quota add to a create, one ``tools/call`` at a time.

    .venv/bin/python bench/investigations/2026-12-01-create-guards/create_guards.py \\
        --n 60 > bench/investigations/2026-12-01-create-guards/results.md

Embedded default (dev server on a fresh SQLite file, in-process worker), FastMCP
``Client`` on the in-memory transport, the no-op ``echo`` tool. One interleaved
run: each round creates one task per variant, in turn, and waits for each to
finish outside the timing (so creates never queue behind each other):

- plain: no key, no quota (the baseline);
- new key: a fresh ``_meta`` idempotency key (one ``describe`` that finds nothing, then the start);
- retried key: the previous key again (the hit: ``describe`` + the task's ``tasks/get``; no start);
- quota 5: ``max_open_tasks_per_caller=5``; the caller's finished tasks still hold the
  five slots, so every create reclaims one (5 slot + 5 task ``describe``s, a terminate,
  a claim) -- the steady state of a caller that creates one task after another;
- quota 50: the same with a pool of 50 (50 + 50 ``describe``s once it is full).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/: support/, the benchmarks
import fastmcp_tasks  # noqa: F401  (the client half: declares the tasks extension)
from fastmcp import Client
from support.servers import echo_server

from fastmcp_temporal import IDEMPOTENCY_KEY_META, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.tasks.engine import workflow_id_for

FOLDER = f"bench/investigations/{Path(__file__).resolve().parent.name}"

VARIANTS = ("plain", "new key", "retried key", "quota 5", "quota 50")
WARM_UP = 5


async def run(n: int) -> dict[str, list[float]]:
    extension = TemporalTasks(data_dir=tempfile.mkdtemp(prefix="bench-guards-"), ui=False)
    samples: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    async with Client(echo_server(extension)) as client:
        engine = extension.engine
        last_key = str(uuid.uuid4())
        for round_ in range(n + WARM_UP):
            for variant in VARIANTS:
                engine.quota.limit = {"quota 5": 5, "quota 50": 50}.get(variant)
                meta = None
                if variant == "new key":
                    last_key = str(uuid.uuid4())
                    meta = {IDEMPOTENCY_KEY_META: last_key}
                elif variant == "retried key":
                    meta = {IDEMPOTENCY_KEY_META: last_key}
                started = time.perf_counter()
                task = await call_tool_task(client, "echo", {"text": "x"}, meta=meta)
                elapsed = (time.perf_counter() - started) * 1000
                if round_ >= WARM_UP:
                    samples[variant].append(elapsed)
                handle = engine.client.get_workflow_handle(
                    workflow_id_for(task.task_id, None, engine.scope_secret)
                )
                await handle.result()
    return samples


def main(n: int) -> None:
    load_before = os.getloadavg()[0]
    samples = asyncio.run(run(n))
    base = statistics.median(samples["plain"])
    print("```bash")
    print(f".venv/bin/python {FOLDER}/create_guards.py --n {n} > {FOLDER}/results.md")
    print("```")
    print()
    print(
        f"Shared 2-core machine (other engineers working): 1-minute load average "
        f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end. "
        "Absolute times are this machine's under that load; the ratios are the result."
    )
    print()
    print(f"n = {n} creates per variant, interleaved; ms")
    print()
    print("| variant | p50 | p90 | p50 / plain |")
    print("|---|---|---|---|")
    for variant in VARIANTS:
        values = sorted(samples[variant])
        p50 = statistics.median(values)
        p90 = values[int(len(values) * 0.9) - 1]
        print(f"| {variant} | {p50:.2f} | {p90:.2f} | {p50 / base:.2f}x |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=60)
    main(parser.parse_args().n)
