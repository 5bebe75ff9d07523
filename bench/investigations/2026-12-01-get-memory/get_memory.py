"""What one ``tasks/get`` of a finished big result costs the server in memory.

    .venv/bin/python bench/investigations/2026-12-01-get-memory/get_memory.py \\
        > bench/investigations/2026-12-01-get-memory/results.md

``bench/support/payload_server.py`` (the embedded default: dev server, in-process
worker, disk store) runs in its own process; a FastMCP client in this process,
per size (10 MB, 50 MB of text), ``--repeats`` times in turn: runs a task to
its result (polling), reads the finished task with one ``tasks/get``, and calls
the synchronous twin (``produce_sync``, no task). Around each request the
server's peak RSS is reset (``/proc/<pid>/clear_refs`` ``5``) and read back
(``VmHWM``): the row is that peak minus the RSS just before, i.e. how much
memory the request needed at its height. The server runs with
``MALLOC_MMAP_THRESHOLD_=65536`` so every big buffer is its own mapping, given
back when freed: a request cannot reuse what the one before it left, and the
delta counts every copy the request held at once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/: support/, the benchmarks

from fastmcp import Client
from support.payload_server import text_of

from fastmcp_temporal.client import TasksClientExtension, ToolTask, call_tool_task
from fastmcp_temporal.server.embedded.devserver import free_port

HERE = Path(__file__).resolve().parent
BENCH = HERE.parents[1]
SIZES = {"10 MB": 10_000_000, "50 MB": 50_000_000}


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


@dataclass
class Sample:
    peak_mb: float
    seconds: float


async def measured(pid: int, request: Callable[[], Awaitable[None]]) -> Sample:
    """The server's peak RSS during ``request`` above its RSS just before it, and its time."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = _status_kb(pid, "VmRSS")
    started = time.perf_counter()
    await request()
    seconds = time.perf_counter() - started
    return Sample((_status_kb(pid, "VmHWM") - before) / 1024, seconds)


@asynccontextmanager
async def server(data_dir: str) -> AsyncIterator[tuple[str, int]]:
    """``payload_server.py --backend temporal`` in its own process: its URL and PID."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(BENCH / "support" / "payload_server.py"),
        "--port",
        str(port),
        "--backend",
        "temporal",
        "--data-dir",
        data_dir,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"},
    )
    try:
        for _ in range(600):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", process.pid
    finally:
        process.terminate()
        await process.wait()


async def main(repeats: int) -> None:
    async with AsyncExitStack() as stack:
        data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-get-memory-"))
        url, pid = await stack.enter_async_context(server(data_dir))
        client = await stack.enter_async_context(
            Client(url, timeout=600, extensions=[TasksClientExtension()])
        )
        print("| result | request | server peak RSS above before, MB (median) | max | ms | n |")
        print("|---|---|---|---|---|---|")
        for label, size in SIZES.items():
            expected = text_of(size)
            tasks: list[ToolTask] = []

            async def whole_task(
                size: int = size, expected: str = expected, tasks: list[ToolTask] = tasks
            ) -> None:
                task = await call_tool_task(client, "produce", {"size": size})
                tasks.append(task)
                if (await task.result()).content[0].text != expected:  # type: ignore[union-attr]
                    raise AssertionError("the task returned another result")

            async def get_finished(expected: str = expected, tasks: list[ToolTask] = tasks) -> None:
                state = await tasks[-1].status()
                if (state.result or {})["content"][0]["text"] != expected:
                    raise AssertionError("tasks/get returned another result")

            async def call_sync(size: int = size, expected: str = expected) -> None:
                result = await client.call_tool("produce_sync", {"size": size})
                if result.content[0].text != expected:  # type: ignore[union-attr]
                    raise AssertionError("tools/call returned another result")

            rows: list[tuple[str, Callable[[], Awaitable[None]], list[Sample]]] = [
                ("task: `tools/call` until the result (polling)", whole_task, []),
                ("`tasks/get` of the finished task", get_finished, []),
                ("synchronous `tools/call` (no task)", call_sync, []),
            ]
            for _ in range(repeats):
                for _, request, samples in rows:
                    samples.append(await measured(pid, request))
            for name, _, samples in rows:
                peaks = [sample.peak_mb for sample in samples]
                ms = statistics.median(sample.seconds for sample in samples) * 1000
                print(
                    f"| {label} | {name} | {statistics.median(peaks):.0f} | "
                    f"{max(peaks):.0f} | {ms:.0f} | {len(samples)} |",
                    flush=True,
                )
        blobs = sorted(
            p.stat().st_size for p in Path(data_dir, "payloads").rglob("*") if p.is_file()
        )
        print(
            f"\nblobs in the store for these {len(SIZES) * repeats} tasks: "
            f"{len(blobs)} files, {sum(blobs) / 1e6:.0f} MB"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    asyncio.run(main(parser.parse_args().repeats))
