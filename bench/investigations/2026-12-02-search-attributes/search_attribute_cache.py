"""What ``system.forceSearchAttributesCacheRefreshOnRead`` costs our tasks, side by side.

    .venv/bin/python bench/investigations/2026-12-02-search-attributes/search_attribute_cache.py \\
        --n 400 --concurrency 20 --rounds 8 \
        --busy 2 > bench/investigations/2026-12-02-search-attributes/results.md

The ``temporal`` CLI's dev server turns that setting on by default: every call
that carries search attributes (each task's ``StartWorkflowExecution``, each
``McpTaskStatus`` upsert) re-reads the namespace from SQLite, one at a time
under the namespace registry's lock, with a 3 s timeout that Temporal reports
as "Namespace default is not found." The embedded dev server turns it off
(``SEARCH_ATTRIBUTE_CACHE_DYNAMIC_CONFIG``). Two dev servers run for the whole
run, started the same way (``DevServer.start``: SQLite in WAL mode, our search
attributes declared), each on its own file; one gets the CLI's default back
with a later ``--dynamic-config-value`` (the CLI keeps the last value given
for a key). Before measuring, each server is asked to use a search attribute
added a moment before: one that re-reads on every call accepts it at once,
one that reads the cache rejects it until its next refresh -- the check that
each server runs with the setting this script says.

Each side is a ``TemporalTasks`` on its server with an in-process worker, a
no-op task tool (``compare.echo_server``) and the FastMCP ``Client`` on the
in-memory transport: ``--concurrency`` callers each create a task
(``tools/call``; a failed create is counted, not retried) and wait for its
result as a client does (``ToolTask.result()``, which asks again while the
server answers that Temporal is busy). The sides alternate in ``--rounds``
blocks, each round in the other order, first on the machine as it is, then
with ``--busy`` processes spinning on the CPU. Counted per side: failed creates
and failed waits, and every mention of "Namespace" in a create's error, in this
process's warning logs (the extension logs each busy answer) and in the dev
server's own log.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/: support/, the benchmarks

import fastmcp_tasks  # noqa: F401  (the client half: declares the tasks extension)
from fastmcp import Client
from support.measure import cpu_seconds, pct
from support.servers import echo_server
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client as TemporalClient
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.client import call_tool_task

SETTING = "system.forceSearchAttributesCacheRefreshOnRead"
#: (label, arguments added after the embedded default's own command line)
SIDES = [
    (f"cache (ours: `{SETTING}=false`)", []),
    (
        f"re-read on every call (the CLI's default: `{SETTING}=true`)",
        ["--dynamic-config-value", f"{SETTING}=true"],
    ),
]
MENTION = "Namespace"


@dataclass
class Tally:
    """One side's numbers in one phase, summed over its blocks."""

    creates: list[float] = field(default_factory=list)
    e2e: list[float] = field(default_factory=list)
    elapsed: float = 0.0
    cpu_dev_server: float = 0.0
    failed_creates: int = 0
    failed_waits: int = 0
    create_errors_mentioning: int = 0
    log_records_mentioning: int = 0
    dev_server_log_mentioning: int = 0

    @property
    def tasks_per_s(self) -> float:
        return len(self.e2e) / self.elapsed


@dataclass
class Side:
    label: str
    dev: DevServer
    client: Client
    extension: TemporalTasks


class MentionCounter(logging.Handler):
    """Counts warnings in this process that mention ``MENTION``, for the side being measured.

    Both sides share this process, but only one is measured at a time.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.tally: Tally | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.tally is not None and MENTION in record.getMessage():
            self.tally.log_records_mentioning += 1

    @contextmanager
    def counting_for(self, tally: Tally) -> Iterator[None]:
        self.tally = tally
        try:
            yield
        finally:
            self.tally = None


def log_mentions(dev: DevServer) -> int:
    return dev.log_path.read_text(errors="replace").count(MENTION)


async def setting_check(dev: DevServer, attribute: str) -> str:
    """Add a search attribute, then start a workflow carrying it at once: what the server says."""
    temporal = await TemporalClient.connect(dev.address)
    await temporal.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=dev.namespace,
            search_attributes={attribute: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD},
        )
    )
    pair = SearchAttributePair(SearchAttributeKey.for_keyword(attribute), "x")
    try:
        handle = await temporal.start_workflow(
            "setting-check",
            id=f"setting-check-{time.time_ns()}",
            task_queue="setting-check-nobody-polls",
            search_attributes=TypedSearchAttributes([pair]),
        )
    except Exception as err:
        return f"rejected at once (cached): {err}"
    await handle.terminate()
    return "accepted at once (re-read)"


async def block(
    side: Side, tally: Tally, n: int, concurrency: int, counter: MentionCounter
) -> None:
    indexes = iter(range(n))

    async def caller() -> None:
        for i in indexes:
            started = time.perf_counter()
            try:
                task = await call_tool_task(side.client, "echo", {"text": str(i)})
            except Exception as err:
                tally.failed_creates += 1
                tally.create_errors_mentioning += MENTION in str(err)
                continue
            tally.creates.append(time.perf_counter() - started)
            try:
                await task.result()
            except Exception:
                tally.failed_waits += 1
                continue
            tally.e2e.append(time.perf_counter() - started)

    pid = side.dev.process.pid
    cpu, log_before = cpu_seconds(pid), log_mentions(side.dev)
    began = time.perf_counter()
    with counter.counting_for(tally):
        await asyncio.gather(*(caller() for _ in range(concurrency)))
    tally.elapsed += time.perf_counter() - began
    tally.cpu_dev_server += cpu_seconds(pid) - cpu
    tally.dev_server_log_mentioning += log_mentions(side.dev) - log_before


async def phase(
    sides: list[Side], n: int, concurrency: int, rounds: int, counter: MentionCounter
) -> dict[str, Tally]:
    """``n`` tasks per side in ``rounds`` blocks, the order of the sides swapped each round."""
    tallies = {side.label: Tally() for side in sides}
    for round_number in range(rounds):
        share = n // rounds + (1 if round_number < n % rounds else 0)
        order = sides if round_number % 2 == 0 else sides[::-1]
        for side in order:
            await block(side, tallies[side.label], share, concurrency, counter)
    return tallies


@contextmanager
def busy_cpu(processes: int) -> Iterator[list[int]]:
    """``processes`` Python processes spinning on the CPU, stopped by their PIDs."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)
    ]
    try:
        yield [spinner.pid for spinner in spinners]
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def load() -> str:
    return "{:.2f} / {:.2f} / {:.2f}".format(*os.getloadavg())


async def main(n: int, concurrency: int, rounds: int, busy: int) -> None:
    counter = MentionCounter()
    logging.getLogger().addHandler(counter)
    notes = [f"Load average (1 / 5 / 15 min) at the start: {load()}"]
    async with AsyncExitStack() as stack:
        sides: list[Side] = []
        for index, (label, extra_args) in enumerate(SIDES):
            data_dir = Path(
                stack.enter_context(tempfile.TemporaryDirectory(prefix=f"bench-sa-cache-{index}-"))
            )
            dev = await DevServer.start(data_dir=data_dir, ui=False, extra_args=extra_args)
            stack.callback(dev.stop)
            notes.append(f"Setting check, {label}: {await setting_check(dev, 'BenchSettingCheck')}")
            extension = TemporalTasks(address=dev.address, data_dir=data_dir)
            client = await stack.enter_async_context(
                Client(echo_server(extension, f"bench-sa-cache-{index}"))
            )
            sides.append(Side(label, dev, client, extension))
        for side in sides:  # warm-up: pollers, caches, sandboxes
            for i in range(10):
                await (await call_tool_task(side.client, "echo", {"text": str(i)})).result()
            assert side.extension.engine.starter.search_attributes, "tasks start without them"
        results = {"as the machine is": await phase(sides, n, concurrency, rounds, counter)}
        notes.append(f"Load average after the first phase: {load()}")
        with busy_cpu(busy):
            await asyncio.sleep(2)  # the spinners take the cores before the first block
            results[f"{busy} processes spinning on the CPU"] = await phase(
                sides, n, concurrency, rounds, counter
            )
            notes.append(f"Load average at the end of that phase: {load()}")
    print_results(results, notes, n, concurrency, rounds)


def print_results(
    results: dict[str, dict[str, Tally]], notes: list[str], n: int, concurrency: int, rounds: int
) -> None:
    print(
        f"n = {n} tasks per side and phase at concurrency {concurrency}, in {rounds} "
        "interleaved rounds; latencies in ms (p50 / p99); dev-server CPU in ms per task done"
    )
    print()
    for note in notes:
        print(f"- {note}")
    print()
    print(
        "| phase | side | tasks done | tasks/s | create p50 / p99 | end to end p50 / p99 | "
        "dev-server CPU | failed creates | failed waits | "
        f'"{MENTION}" in create errors / our warnings / dev-server log |'
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for phase_name, tallies in results.items():
        for label, t in tallies.items():
            done = len(t.e2e)
            print(
                f"| {phase_name} | {label} | {done} | {t.tasks_per_s:.1f} | "
                f"{pct(t.creates, 0.5):.1f} / {pct(t.creates, 0.99):.1f} | "
                f"{pct(t.e2e, 0.5):.0f} / {pct(t.e2e, 0.99):.0f} | "
                f"{t.cpu_dev_server / max(done, 1) * 1000:.1f} | {t.failed_creates} | "
                f"{t.failed_waits} | {t.create_errors_mentioning} / {t.log_records_mentioning} / "
                f"{t.dev_server_log_mentioning} |"
            )
    print()
    print("| ratio, cache / re-read (this run) | tasks/s | create p50 | dev-server CPU per task |")
    print("|---|---|---|---|")
    for phase_name, tallies in results.items():
        cache, reread = (tallies[label] for label, _ in SIDES)
        create_cache, create_reread = pct(cache.creates, 0.5), pct(reread.creates, 0.5)
        cpu_cache = cache.cpu_dev_server / max(len(cache.e2e), 1) * 1000
        cpu_reread = reread.cpu_dev_server / max(len(reread.e2e), 1) * 1000
        print(
            f"| {phase_name} | {cache.tasks_per_s:.1f} / {reread.tasks_per_s:.1f} = "
            f"**{cache.tasks_per_s / reread.tasks_per_s:.2f} x** | "
            f"{create_cache:.0f} / {create_reread:.0f} ms = "
            f"**{create_cache / create_reread:.2f} x** | "
            f"{cpu_cache:.1f} / {cpu_reread:.1f} ms = **{cpu_cache / cpu_reread:.2f} x** |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--busy", type=int, default=2, help="processes spinning in phase two")
    args = parser.parse_args()
    asyncio.run(main(args.n, args.concurrency, args.rounds, args.busy))
