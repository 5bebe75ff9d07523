"""What the benchmarks read off a run: CPU seconds of a process, percentiles, ratios."""

from __future__ import annotations

import os
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def pct(samples: list[float], q: float) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


def ratio(value: float, base: float) -> str:
    """``value / base`` for a report; a dash when ``base`` is zero.

    CPU seconds come in clock ticks (10 ms here): a short run (``--smoke``) can measure
    a base of nothing, and a ratio to nothing means nothing.
    """
    return f"{value / base:.2f}" if base else "-"
