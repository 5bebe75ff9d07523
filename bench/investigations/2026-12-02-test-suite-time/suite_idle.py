"""How busy the two cores were during a test run, and which tests ran while they idled.

```bash
.venv/bin/python bench/investigations/2026-12-02-test-suite-time/suite_idle.py \\
    sample /tmp/cpu.tsv &   # beside the run, until killed
PYTHONPATH=bench/investigations/2026-12-02-test-suite-time/suite_timeline_site \\
    SUITE_TIMELINE=/tmp/timeline.tsv ./dev test -p suite_timeline
kill %1
.venv/bin/python bench/investigations/2026-12-02-test-suite-time/suite_idle.py \\
    report /tmp/cpu.tsv /tmp/timeline.tsv
```

``sample`` writes the busy share of all cores once a second (from ``/proc/stat``);
``report`` prints the run's mean, the seconds under 60 %, and for each 10 s window
under 60 % the tests each xdist worker was in: a suite whose workers all wait on
timers at once (heartbeat timeouts, retry backoff) leaves the cores idle, and more
workers fill those windows.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

IDLE_BELOW = 60
WINDOW_S = 10


def _cpu_times() -> tuple[int, int]:
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def sample(out: Path) -> None:
    busy, total = _cpu_times()
    while True:
        time.sleep(1)
        now_busy, now_total = _cpu_times()
        share = 100 * (now_busy - busy) // max(now_total - total, 1)
        with out.open("a") as file:
            file.write(f"{int(time.time())}\t{share}\n")
        busy, total = now_busy, now_total


def report(cpu_file: Path, timeline_file: Path) -> None:
    cpu = {int(t): int(share) for t, share in (line.split() for line in cpu_file.open())}
    spans: list[tuple[float, float, str, str]] = []
    started: dict[tuple[str, str], float] = {}
    for line in timeline_file.open():
        stamp, worker, kind, node = line.rstrip("\n").split("\t")
        if kind == "start":
            started[(worker, node)] = float(stamp)
        elif (worker, node) in started:
            spans.append((started.pop((worker, node)), float(stamp), worker, node))
    begin, end = min(s[0] for s in spans), max(s[1] for s in spans)
    during = {t: share for t, share in cpu.items() if begin <= t <= end}
    print(
        f"{len(during)} s sampled, cores busy {sum(during.values()) / len(during):.1f} % "
        f"on average, {sum(share < IDLE_BELOW for share in during.values())} s under "
        f"{IDLE_BELOW} %"
    )
    windows: dict[int, list[int]] = defaultdict(list)
    for t, share in during.items():
        windows[int((t - begin) // WINDOW_S)].append(share)
    for index, shares in sorted(windows.items()):
        mean = sum(shares) / len(shares)
        if mean >= IDLE_BELOW:
            continue
        low, high = begin + index * WINDOW_S, begin + (index + 1) * WINDOW_S
        print(f"\n{index * WINDOW_S}-{(index + 1) * WINDOW_S} s: cores {mean:.0f} % busy")
        for start, stop, worker, node in sorted(spans):
            if start < high and stop > low:
                print(f"  {worker} {start - begin:6.0f}-{stop - begin:4.0f} s  {node}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("sample").add_argument("out", type=Path)
    reading = commands.add_parser("report")
    reading.add_argument("cpu", type=Path)
    reading.add_argument("timeline", type=Path)
    args = parser.parse_args()
    if args.command == "sample":
        sample(args.out)
    else:
        report(args.cpu, args.timeline)


if __name__ == "__main__":
    main()
