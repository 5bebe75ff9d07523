"""Which threads of the benchmark process spend the CPU of a call at concurrency 20.

Runs ``bench/compare.py`` for one row at a time (c=20, one round), and from inside
its run reads each thread's CPU time from ``/proc/<pid>/task/*/stat`` over a window
that starts after the server is up and warmed: the Python main thread (the event
loop: HTTP server, client, temporalio's Python side), temporalio's Rust core
(``tokio-rt-worker``) and the workflow activation threads. Per call =
the window's CPU seconds / the calls the row completed in it (its tasks/s x window).

    .venv/bin/python bench/investigations/2026-12-05-c20-cpu/thread_cpu.py
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

#: (label, n calls, ``--only`` pattern): n keeps the row running past the window.
ROWS = [
    (
        "durable plain call, default tool",
        4500,
        "HTTP client without the tasks extension (durable sync call)",
    ),
    ("raw eager start + activity", 6000, "raw engine: workflow + activity, eager start"),
    ("durable plain call, short tool", 6000, "durable sync call, a short tool (local legs)"),
    (
        "raw eager start + local activity",
        9000,
        "raw engine: workflow + local activity, eager start",
    ),
    ("FastMCP plain tool, no task (the HTTP path alone)", 30000, "HTTP path alone"),
]
SKIP = ["before", "progressToken", "limited", "polled", "sandboxed", "separate worker"]


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds so far per thread name (numbered names folded together)."""
    ticks = os.sysconf("SC_CLK_TCK")
    totals: collections.Counter[str] = collections.Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except FileNotFoundError:
            continue
        name = re.sub(r"[-_]?\d+$", "", stat[stat.index("(") + 1 : stat.rindex(")")])
        fields = stat[stat.rindex(")") + 2 :].split()
        totals[name] += (int(fields[11]) + int(fields[12])) / ticks
    return dict(totals)


def measure(n: int, only: str, start_s: float, window_s: float) -> tuple[float, dict[str, float]]:
    command = [
        sys.executable, "bench/compare.py", "--n", str(n), "--rounds", "1",
        "--concurrency", "20", "--no-redis", "--warm-up", "50", "--only", only, "--skip", *SKIP,
    ]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    time.sleep(start_s)
    before = thread_cpu(process.pid)
    time.sleep(window_s)
    after = thread_cpu(process.pid)
    output, _ = process.communicate()
    row = next(line for line in output.splitlines() if line.startswith("| ") and "| 20 |" in line)
    calls_per_s = float(row.split("|")[3])
    spent = {name: after[name] - before.get(name, 0.0) for name in after}
    return calls_per_s, spent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start", type=float, default=22.0, help="seconds before the window")
    parser.add_argument("--window", type=float, default=20.0)
    args = parser.parse_args()
    print(
        "| row | calls/s | main thread ms/call | Rust core ms/call "
        "| workflow threads ms/call | all ms/call |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for label, n, only in ROWS:
        calls_per_s, spent = measure(n, only, args.start, args.window)
        calls = calls_per_s * args.window
        per_call = {name: seconds / calls * 1000 for name, seconds in spent.items()}
        print(
            f"| {label} | {calls_per_s:.1f} | {per_call.get('python', 0):.2f} "
            f"| {per_call.get('tokio-rt-worker', 0):.2f} "
            f"| {per_call.get('workflow-proces', 0):.2f} | {sum(per_call.values()):.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
