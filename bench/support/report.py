"""A benchmark's report as every result file begins: the command that made it, the load before it.

The load average is read before the run starts, so a result says how busy the
machine was when its numbers were taken (2 cores: other work moves them).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any


def publish(script: str, run: Coroutine[Any, Any, str], out: Path | None) -> None:
    """Run ``run`` (the benchmark, returning its report) and print the report under its
    command line and the load before it; with ``out``, write it there too."""
    command = " ".join([f"bench/{script}", *sys.argv[1:]])
    load = os.getloadavg()
    text = (
        f"Command: `.venv/bin/python {command}`; load average before: "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}\n\n" + asyncio.run(run)
    )
    if out is not None:
        out.write_text(text + "\n")
    print(text)
